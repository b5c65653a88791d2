"""`judge baseline`: time the reference (eager, torch.compile, torch.compile reduce-overhead).

Each (mode, flags) pair runs in a fresh child process (`judge baseline-mode`), so nothing a mode
leaves behind (compiled graphs, CUDA graphs, changed flags, a monkey-patched torch) reaches another,
and no candidate has ever been loaded into any of them (HACKS row 19). Timing is timing.py's method
(the runner's). Results are cached per (task sha256, GPU name, track, torch version, method
version); a cached entry is reused for the modes it has.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Optional

import torch

from . import files
from .judge_task import JudgeTask, secret_seed
from .judge_tracks import (PYTORCH_DEFAULT_FLAGS, apply_flags, baseline_flags, current_flags,
                           get_track)
from .timing import (L2Flusher, method_agreement, method_overhead, time_plain_events,
                     time_with_flush)

MODES = ("eager", "compile", "reduce-overhead")
BASELINE_VERSION = 3  # 2: time follows choose_basis; 3: method_agreement recorded
DEFAULT_CACHE_DIR = os.path.join(os.path.expanduser("~"), ".cache", "stitchcuda", "baselines")


@dataclasses.dataclass
class BaselineOptions:
    graph_dir: str
    track: str = "fp32"
    modes: tuple[str, ...] = MODES
    info_modes: tuple[str, ...] = ("eager",)  # also timed with PyTorch's default flags
    iters: int = 50
    warmup: int = 5
    timing_sets: int = 4
    device: str = "cuda"
    task: Optional[str] = None
    cache_dir: Optional[str] = DEFAULT_CACHE_DIR
    child_timeout_s: float = 1800.0


# ------------------------------------------------------------------------------------------------
# One mode, in this process (the child).


def _compile(model: torch.nn.Module, mode: str):
    if mode == "eager":
        return model
    if mode == "compile":
        return torch.compile(model)
    if mode == "reduce-overhead":
        return torch.compile(model, mode="reduce-overhead")
    raise ValueError(f"unknown mode {mode}")


def time_one_mode(graph_dir: str, track_name: str, mode: str, flags_name: str, iters: int,
                  warmup: int, timing_sets: int, device_name: str,
                  task_path: Optional[str] = None) -> dict:
    track = get_track(track_name)
    flags = baseline_flags(track) if flags_name == "track" else PYTORCH_DEFAULT_FLAGS
    device = torch.device(device_name)
    task = JudgeTask(graph_dir, device, task_path)
    apply_flags(flags)
    model = _compile(task.model, mode)
    user_sets = [task.draw_user_inputs(secret_seed()) for _ in range(max(timing_sets, 1))]

    def refresh(index, tensors):
        task.refresh_user_inputs(tensors)  # in place, same buffers; not timed

    autocast = track.baseline_autocast_dtype if flags_name == "track" else None

    def forward(tensors):
        with torch.no_grad():
            if autocast is not None:
                with torch.autocast(device.type, dtype=autocast):
                    return model(*task.call_args(tensors))
            return model(*task.call_args(tensors))

    # The first call compiles (torch.compile is lazy): timed on its own, wall clock.
    started = time.perf_counter()
    forward(user_sets[0])
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    first_call_s = time.perf_counter() - started
    flusher = L2Flusher(device)
    timed = time_with_flush(forward, user_sets, device, iters=iters, warmup=warmup,
                            refresh=refresh, flusher=flusher)
    plain = time_plain_events(forward, user_sets[0], device, iters=iters, warmup=warmup)
    agreement = method_agreement(forward, user_sets, device, iters=iters, warmup=warmup,
                                 refresh=refresh, flusher=flusher)
    return {
        "mode": mode,
        "flags": flags_name,
        "precision": current_flags().as_json(),
        "autocast": str(autocast) if autocast is not None else None,
        "compile_s": round(first_call_s, 3) if mode != "eager" else 0.0,
        "first_call_s": round(first_call_s, 3),
        "timing": timed.as_json(),
        "plain_events": plain.stats.as_json(),  # warm L2
        "method_agreement": agreement,  # interleaved with plain events + flush
        "method_overhead": method_overhead(device, iters=iters, warmup=warmup,
                                           flusher=flusher).as_json(),
    }


# ------------------------------------------------------------------------------------------------
# The parent: cache, fresh processes, merged file.


def cache_key(task_sha256: str, gpu: str, track: str, torch_version: str) -> str:
    text = f"{task_sha256}|{gpu}|{track}|{torch_version}|v{BASELINE_VERSION}"
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _device_name(device: torch.device) -> str:
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


def _run_child(options: BaselineOptions, mode: str, flags_name: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="stitch-baseline-") as temp:
        out_path = os.path.join(temp, "mode.json")
        command = [sys.executable, "-m", "stitch_harness.judge", "baseline-mode",
                   "--graph-dir", options.graph_dir, "--track", options.track, "--mode", mode,
                   "--flags", flags_name, "--iters", str(options.iters), "--warmup",
                   str(options.warmup), "--timing-sets", str(options.timing_sets), "--device",
                   options.device, "--out", out_path]
        if options.task:
            command += ["--task", options.task]
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
        started = time.monotonic()
        try:
            proc = subprocess.run(command, env=env, capture_output=True, text=True,
                                  timeout=options.child_timeout_s)
        except subprocess.TimeoutExpired:
            return {"mode": mode, "flags": flags_name, "error":
                    f"timed out after {options.child_timeout_s:g} s"}
        if proc.returncode != 0 or not os.path.isfile(out_path):
            tail = (proc.stderr or "").strip().splitlines()[-5:]
            return {"mode": mode, "flags": flags_name,
                    "error": f"exit status {proc.returncode}: " + " | ".join(tail)}
        with open(out_path) as handle:
            result = json.load(handle)
        result["process_s"] = round(time.monotonic() - started, 3)
        return result


def run_baseline(options: BaselineOptions, out_path: str, log=print) -> dict:
    device = torch.device(options.device)
    with open(os.path.join(options.graph_dir, "graph.json")) as handle:
        graph = json.load(handle)
    task_sha = graph.get("task", {}).get("sha256", "")
    gpu = _device_name(device)
    torch_version = torch.__version__
    key = cache_key(task_sha, gpu, options.track, torch_version)
    cache_path = None
    cached: dict = {}
    if options.cache_dir:
        task_name = graph.get("task", {}).get("name", "task")
        cache_path = os.path.join(options.cache_dir, f"{task_name}-{key}.json")
        if os.path.isfile(cache_path):
            with open(cache_path) as handle:
                cached = json.load(handle)
    entries = dict(cached.get("modes", {}))
    info_entries = dict(cached.get("pytorch_default_flags", {}))
    wanted = [(mode, "track") for mode in options.modes if mode not in entries]
    wanted += [(mode, "pytorch-default") for mode in options.info_modes
               if mode not in info_entries]
    for mode, flags_name in wanted:
        log(f"baseline: timing {mode} ({flags_name} flags) in a fresh process")
        result = _run_child(options, mode, flags_name)
        if "error" not in result:
            (entries if flags_name == "track" else info_entries)[mode] = result
        else:
            log(f"baseline: {mode} ({flags_name}) failed: {result['error']}")
            (entries if flags_name == "track" else info_entries)[mode] = result
    record = {
        "version": BASELINE_VERSION,
        "task": graph.get("task", {}).get("name"),
        "task_sha256": task_sha,
        "gpu": gpu,
        "track": options.track,
        "torch_version": torch_version,
        "cache_key": key,
        "iters": options.iters,
        "warmup": options.warmup,
        "timing_sets": options.timing_sets,
        "modes": entries,
        "pytorch_default_flags": info_entries,
    }
    succeeded = {m: e for m, e in entries.items() if "error" not in e}
    if cache_path and wanted:
        # Failed modes are not cached: the next run tries them again.
        cacheable = {**record, "modes": succeeded,
                     "pytorch_default_flags": {m: e for m, e in info_entries.items()
                                               if "error" not in e}}
        files.write_json(cache_path, cacheable)
    selected = {**record, "modes": {m: entries[m] for m in options.modes if m in entries},
                "from_cache": not wanted}
    files.write_json(out_path, selected)
    return selected
