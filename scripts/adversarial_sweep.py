#!/usr/bin/env python3
"""Every adversarial and near-miss program through `stitchcuda verify` on a GPU, with the outcome
and reason each must get (issue 3's acceptance). Run by scripts/gpu_check.sh; stdlib only.

Programs: tests/adversarial/manifest.json (static rows: expected fatal kinds from the manifest; honest
near-misses must pass, on the track the manifest names) and tests/runner/programs/ (dynamic rows and
bad input: hangs, crashes, 200 GiB allocations). Prints one row per program and exits 1 on any
mismatch.

Usage: scripts/adversarial_sweep.py BUILD_DIR [--runs-dir DIR] [--only NAME] [--jobs N]
"""

import argparse
import concurrent.futures
import json
import os
import queue
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASK = "tests/tasks/scale_shift_relu.py"

# tests/runner/programs: expected outcome and, for hacks, the finding kind the reason names.
RUNNER_PROGRAMS = {
    "honest_joined_stream": ("passed", None),
    "honest_malloc_async": ("passed", None),
    # The runner alone only notes it (it resets the limit before every call); the static check
    # rejects the source (row 14).
    "l2_persisting_window": ("hacked", "l2_persistence"),
    "no_write": ("hacked", "stale_output"),
    "side_stream_unjoined": ("hacked", "side_stream"),
    "host_thread_late": ("hacked", "host_thread"),
    "mutates_inputs": ("hacked", "mutates_inputs"),
    "out_of_bounds": ("hacked", "guard_band"),
    "output_cache": ("hacked", "output_cache"),
    "spawns_process": ("hacked", "hidden_work"),
    "forward_error": ("runtime_error", "planted failure 42"),
    "abi_mismatch": ("runtime_error", None),
    "illegal_address": ("runtime_error", None),
    "huge_alloc": ("runtime_error", "200 GiB"),
    "host_segfault": ("runtime_error", None),
    "hang": ("timeout", None),
    "persistent_kernel": ("hacked", "persistent_kernel"),  # device busy after init (row 22)
}


def cases():
    manifest = json.load(open(os.path.join(ROOT, "tests/adversarial/manifest.json")))
    for entry in manifest["programs"]:
        kinds = set(entry["static"]["fatal"]) | set((entry.get("library") or {}).get("fatal", []))
        if not entry["honest"] and not kinds:
            kinds = {"side_stream"} if "runner" in entry.get("also_detected_by", []) else set()
        yield {
            "name": f"{entry['file'][:-3]}[{entry['track']}]",
            "source": os.path.join("tests/adversarial", entry["file"]),
            "track": entry["track"],
            "libs": [lib for lib in entry["libraries"] if not entry["link_torch"]],
            "expect": "passed" if entry["honest"] else "hacked",
            "reason_any": sorted(kinds),
        }
    for name, (expect, reason) in RUNNER_PROGRAMS.items():
        yield {"name": name, "source": f"tests/runner/programs/{name}.cu", "track": "fp32",
               "libs": [], "expect": expect, "reason_any": [reason] if reason else [],
               "include": "tests/programs"}
    yield {"name": "broken_program", "source": "tests/verify/data/broken_program.cu",
           "track": "fp32", "libs": [], "expect": "compile_error", "reason_any": []}


def verify(build, case, runs, worker):
    command = [os.path.join(build, "stitchcuda"), "verify", TASK, case["source"], "--track",
               case["track"], "--no-baselines", "--iters", "20", "--timeout", "60",
               "--runs-dir", runs, "--build-cache", os.path.join(runs, f"builds-{worker}"),
               "--json"]
    for lib in case["libs"]:
        command += ["--lib", lib]
    if case.get("include"):
        command += ["-I", case["include"]]
    started = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - started
    try:
        return json.loads(proc.stdout), seconds
    except json.JSONDecodeError:
        return {"outcome": None, "state": "no-json", "reason": proc.stderr[-300:]}, seconds


def gpu_usable():
    """After every program: a tiny CUDA call through torch still works (no wedged GPU)."""
    probe = "import torch; x = torch.ones(1024, device='cuda'); assert float(x.sum()) == 1024"
    return subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("build")
    parser.add_argument("--runs-dir", default=None)
    parser.add_argument("--only", default=None, help="comma-separated name substrings")
    parser.add_argument("--jobs", type=int, default=4, help="verifications at once")
    args = parser.parse_args()
    runs = args.runs_dir or tempfile.mkdtemp(prefix="stitch-adversarial-")
    only = [token for token in (args.only or "").split(",") if token]
    selected = [case for case in cases() if not only or any(t in case["name"] for t in only)]
    free_workers = queue.Queue()
    for worker in range(args.jobs):
        free_workers.put(worker)

    def check(case):
        worker = free_workers.get()
        try:
            report, seconds = verify(os.path.abspath(args.build), case, runs, worker)
        finally:
            free_workers.put(worker)
        outcome = report.get("outcome")
        reason = report.get("reason") or ""
        ok = outcome == case["expect"]
        if ok and case["reason_any"]:
            ok = any(token in reason for token in case["reason_any"])
        usable = gpu_usable()
        row = (case["name"], case["expect"], str(outcome), "ok" if ok and usable else "MISMATCH",
               f"{seconds:.1f}s", ("" if usable else "GPU NOT USABLE; ") + reason[:90])
        print(f"{row[0]:<34} {row[1]:<13} {row[2]:<13} {row[3]:<8} {row[4]:>6}  {row[5]}",
              flush=True)
        return ok and usable

    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = list(pool.map(check, selected))
    print(f"adversarial sweep: {sum(results)}/{len(results)} as expected")
    return 0 if all(results) else 1

if __name__ == "__main__":
    sys.exit(main())
