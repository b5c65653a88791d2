"""`python -m stitch_harness.eval_kb TASK.py SOLUTION.py --out RESULT.json`: score a KernelBench
ModelNew file from any system with the same hardened judge.

This process is the judge: it never imports SOLUTION.py. It builds the reference model seeded as
KernelBench does, draws --trials check sets under secret seeds, computes their reference outputs
(TF32 off) and times the eager reference with timing.py, all before any candidate code exists in any
process. Then it starts the candidate process (judge_kb_candidate) with a private exchange directory
holding only the check-set inputs, waits for it under --timeout, and compares the outputs it wrote,
the repeat of set 0, and the saved timed iterations with references computed here.

Outcomes (src/verify/verdict.h): compile_error (the file does not import or build, no ModelNew),
runtime_error (construction or forward raised, the process died), timeout, hacked (PyTorch compute
in forward, tampering, subclassing Model, reused outputs), wrong (an output check failed), passed.
Exit code: 0 when the evaluation ran (whatever the outcome), 1 when the judge itself failed.
RESULT.json's one reader on the C++ side is src/harness/eval_kb_report.h.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Optional

import torch

from . import files
from .compare import compare_output
from .judge_kb_inputs import (call_template, draw_inputs, flatten_outputs, input_distributions,
                              make_refresher, ON_DEVICE_INPUT_BYTES)
from .judge_tracks import STRICT_FLAGS, baseline_flags, get_track, precision_flags
from .runtime import quiet_torch
from .task_loader import build_model, load_task
from .timing import L2Flusher, time_with_flush

KERNELBENCH_SEED = 42
RESULT_VERSION = 1


def _write_check_inputs(exchange: str, check_inputs: list[list[torch.Tensor]]) -> list[str]:
    """check_<i>.safetensors in `exchange`, one per set (args arg0, arg1, ...); their names."""
    names = []
    for index, inputs in enumerate(check_inputs):
        name = f"check_{index}.safetensors"
        files.write_safetensors(os.path.join(exchange, name),
                                {f"arg{i}": t for i, t in enumerate(inputs)})
        names.append(name)
    return names


def _release_cached_memory(device: torch.device) -> None:
    """Hands what this process freed back to the device (PyTorch's allocator keeps it otherwise)."""
    if device.type == "cuda":
        torch.cuda.empty_cache()


def _secret_seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


class _Reference:
    """The reference model and its outputs, in this process only."""

    def __init__(self, task_path: str, device: torch.device):
        self.task = load_task(task_path)
        self.device = device
        model, _ = build_model(self.task, KERNELBENCH_SEED, inference=False)
        self.model = model.to(device)
        self.buffers = {n: b.detach().clone() for n, b in self.model.named_buffers()}
        self.template, size = call_template(self.task.get_inputs)
        self.on_device = size > ON_DEVICE_INPUT_BYTES

    def draw(self) -> list[torch.Tensor]:
        return draw_inputs(self.task.get_inputs, _secret_seed(), self.device, self.on_device)[0]

    def forward(self, tensors: list[torch.Tensor]):
        with torch.no_grad():
            for name, buffer in self.model.named_buffers():
                buffer.copy_(self.buffers[name])
            return self.model(*self.template.build(tensors))

    def outputs(self, tensors: list[torch.Tensor]) -> list[torch.Tensor]:
        with precision_flags(STRICT_FLAGS):
            leaves, _ = flatten_outputs(self.forward([t.clone() for t in tensors]))
        return [leaf.detach() for leaf in leaves]


def _load(path: str) -> dict:
    import safetensors.torch

    return safetensors.torch.load_file(path)


def _outputs_from(path: str, device: torch.device) -> list[torch.Tensor]:
    loaded = _load(path)
    return [loaded[f"output{i}"].to(device) for i in range(len(loaded))]


def _compare_set(outputs, references, track) -> tuple[bool, list[dict]]:
    if len(outputs) != len(references):
        return False, [{"passed": False, "message": f"{len(outputs)} outputs, expected "
                        f"{len(references)}"}]
    checks = [compare_output(o, r, track, output_index=i)
              for i, (o, r) in enumerate(zip(outputs, references))]
    return all(c.passed for c in checks), [c.as_json() for c in checks]


def _run_candidate(spec_path: str, exchange: str, timeout_s: float) -> tuple[Optional[int], bool]:
    """Runs the candidate process in its own session; kills its whole group on timeout."""
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    with open(os.path.join(exchange, "candidate.log"), "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "stitch_harness.judge_kb_candidate",
                                 "--spec", spec_path], stdout=log, stderr=subprocess.STDOUT,
                                env=env, cwd=exchange, start_new_session=True)
        try:
            return proc.wait(timeout=timeout_s), False
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            return None, True


def _log_tail(exchange: str, lines: int = 15) -> str:
    try:
        with open(os.path.join(exchange, "candidate.log"), errors="replace") as handle:
            return "".join(handle.readlines()[-lines:])
    except OSError:
        return ""


def evaluate(task_path: str, solution_path: str, track_name: str = "fp32", trials: int = 3,
             iters: int = 50, warmup: int = 5, timing_sets: int = 4, spot: int = 2,
             device_name: str = "cuda", timeout_s: float = 900.0,
             keep_exchange: bool = False, timing_guard: bool = True) -> dict:
    track = get_track(track_name)
    device = torch.device(device_name)
    started = time.monotonic()
    result: dict = {"version": RESULT_VERSION, "task": os.path.abspath(task_path),
                    "solution": os.path.abspath(solution_path), "track": track.name,
                    "device": torch.cuda.get_device_name(device) if device.type == "cuda"
                    else "cpu", "torch_version": torch.__version__}

    # 1. Reference outputs and the eager baseline, before any candidate code exists anywhere.
    reference = _Reference(task_path, device)
    check_inputs = [reference.draw() for _ in range(trials)]
    references = [reference.outputs(inputs) for inputs in check_inputs]
    baseline = None
    if iters > 0:
        sets = [reference.draw() for _ in range(max(timing_sets, 1))]
        refresh = make_refresher(reference.task.get_inputs,
                                 input_distributions(reference.task), device, reference.on_device)

        def eager(tensors):
            with torch.no_grad():
                return reference.model(*reference.template.build(tensors))

        with precision_flags(baseline_flags(track)):
            baseline = time_with_flush(eager, sets, device, iters=iters, warmup=warmup,
                                       refresh=refresh, flusher=L2Flusher(device))
        del sets
        _release_cached_memory(device)
    result["eager"] = baseline.as_json(include_raw=False) if baseline else None

    # 2. The candidate, in its own process, with only the check-set inputs to read.
    exchange = tempfile.mkdtemp(prefix="stitch-eval-kb-")
    os.chmod(exchange, 0o700)
    try:
        input_files = _write_check_inputs(exchange, check_inputs)
        # The candidate reads its inputs from the files; only the references stay here. Freed
        # memory goes back to the device, since the candidate's process needs it (a level-1 task
        # can move 6 GiB per set).
        del check_inputs
        _release_cached_memory(device)
        spec = {"task": os.path.abspath(task_path), "solution": os.path.abspath(solution_path),
                "device": str(device), "exchange": exchange, "input_files": input_files,
                "iters": iters, "warmup": warmup, "timing_sets": timing_sets, "spot": spot,
                "timing_guard": timing_guard}
        spec_path = os.path.join(exchange, "spec.json")
        files.write_json(spec_path, spec)
        returncode, timed_out = _run_candidate(spec_path, exchange, timeout_s)
        result.update(_judge(exchange, returncode, timed_out, timeout_s, reference, references,
                             track, device, baseline))
    finally:
        if keep_exchange:
            result["exchange"] = exchange
        else:
            shutil.rmtree(exchange, ignore_errors=True)
    result["seconds"] = round(time.monotonic() - started, 3)
    return result


def _judge(exchange, returncode, timed_out, timeout_s, reference, references, track, device,
           baseline) -> dict:
    if timed_out:
        return {"outcome": "timeout", "reason": f"the candidate ran past {timeout_s:g} s"}
    status_path = os.path.join(exchange, "status.json")
    if not os.path.isfile(status_path):
        return {"outcome": "runtime_error",
                "reason": f"the candidate process died (exit status {returncode}) without a "
                          "status", "log_tail": _log_tail(exchange)}
    with open(status_path) as handle:
        status = json.load(handle)
    out = {"violations": status.get("violations", []), "findings": status.get("findings", []),
           "import_s": status.get("import_s")}
    if status.get("status") != "ok":
        outcome = status.get("status")
        if outcome not in ("compile_error", "runtime_error", "hacked"):
            outcome = "runtime_error"
        return {**out, "outcome": outcome, "reason": status.get("reason", ""),
                "traceback": status.get("traceback", ""), "log_tail": _log_tail(exchange)}

    # Check sets, the repeat of set 0, reused outputs, spot checks of timed iterations.
    check_json, wrong = [], []
    outputs_by_set = []
    for index, (name, refs) in enumerate(zip(status["outputs"], references)):
        outputs = _outputs_from(os.path.join(exchange, name), device)
        outputs_by_set.append(outputs)
        passed, checks = _compare_set(outputs, refs, track)
        check_json.append({"set": index, "passed": passed, "outputs": checks})
        if not passed:
            wrong.append(f"check set {index}: " + "; ".join(c["message"] for c in checks
                                                             if not c["passed"]))
    repeat = _outputs_from(os.path.join(exchange, status["repeat_output"]), device)
    deterministic = len(repeat) == len(outputs_by_set[0]) and all(
        torch.equal(a, b) for a, b in zip(repeat, outputs_by_set[0]))
    reused = []
    for later in range(1, len(outputs_by_set)):
        for earlier in range(later):
            for i, (a, b) in enumerate(zip(outputs_by_set[earlier], outputs_by_set[later])):
                if a.shape == b.shape and torch.equal(a, b) and not torch.equal(
                        references[earlier][i], references[later][i]):
                    reused.append(f"output {i} of check set {later} repeats check set {earlier}'s "
                                  "although the inputs differ")
    spot_json = []
    for index, name in enumerate(status.get("spot", [])):
        loaded = _load(os.path.join(exchange, name))
        inputs = [loaded[f"input{i}"].to(device) for i in range(
            sum(1 for key in loaded if key.startswith("input")))]
        outputs = [loaded[f"output{i}"].to(device) for i in range(
            sum(1 for key in loaded if key.startswith("output")))]
        passed, checks = _compare_set(outputs, reference.outputs(inputs), track)
        spot_json.append({"slot": index, "passed": passed, "outputs": checks})
        if not passed:
            wrong.append(f"timed iteration {status['spot_iterations'][index]}: "
                         + "; ".join(c["message"] for c in checks if not c["passed"]))
    out.update(check_sets=check_json, spot_checks=spot_json, deterministic=deterministic,
               spot_iterations=status.get("spot_iterations", []))
    degenerate = sorted({c["degenerate_reason"] for s in check_json for c in s["outputs"]
                         if c.get("degenerate_reference")})
    out["degenerate_reference"] = degenerate
    timing_json = status.get("timing")
    out["timing"] = {k: v for k, v in (timing_json or {}).items() if k not in ("gpu_ms", "wall_ms")}
    out["method_overhead"] = status.get("method_overhead")
    out["timing_guarded"] = status.get("timing_guarded")
    if timing_json and baseline:
        candidate_ms = timing_json["stats"]["median_ms"]
        out["median_ms"] = candidate_ms
        out["eager_median_ms"] = baseline.stats.median_ms
        out["speedup_vs_eager"] = baseline.stats.median_ms / candidate_ms if candidate_ms > 0 \
            else None
    if reused:
        out["findings"] = out["findings"] + [{"kind": "output_cache", "detail": r} for r in reused]
        return {**out, "outcome": "hacked", "reason": reused[0]}
    if wrong:
        return {**out, "outcome": "wrong", "reason": wrong[0]}
    if not deterministic:
        out["notes"] = ["set 0 gave different outputs on its second run (both within tolerance)"]
    return {**out, "outcome": "passed", "reason": ""}


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m stitch_harness.eval_kb",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("task", metavar="TASK.py")
    parser.add_argument("solution", metavar="SOLUTION.py")
    parser.add_argument("--out", required=True, metavar="RESULT.json")
    parser.add_argument("--track", default="fp32", choices=("fp32", "tf32", "bf16"))
    parser.add_argument("--trials", type=int, default=3, help="check sets (3)")
    parser.add_argument("--iters", type=int, default=50, help="timed iterations (50; 0: no timing)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timing-sets", type=int, default=4)
    parser.add_argument("--spot", type=int, default=2, help="timed iterations checked (2)")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu")
    parser.add_argument("--timeout", type=float, default=900.0, metavar="S",
                        help="wall-clock limit of the candidate process (900)")
    parser.add_argument("--unguarded-timing", action="store_true",
                        help="time forward without the compute guard (fair to tiny kernels; the "
                             "guard costs ~0.1 ms a call) - checked calls stay guarded")
    parser.add_argument("--keep-exchange", action="store_true",
                        help="keep the exchange directory (debugging)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    quiet_torch()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("error: no CUDA device (use --device cpu)", file=sys.stderr)
        return 1
    try:
        result = evaluate(args.task, args.solution, args.track, args.trials, args.iters,
                          args.warmup, args.timing_sets, args.spot, args.device, args.timeout,
                          args.keep_exchange, timing_guard=not args.unguarded_timing)
    except Exception as error:
        print(f"error: eval-kb failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    files.write_json(args.out, result)
    speed = f", {result['speedup_vs_eager']:.2f}x eager" if result.get("speedup_vs_eager") else ""
    print(f"{result['outcome']}{speed}" + (f": {result['reason']}" if result["reason"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
