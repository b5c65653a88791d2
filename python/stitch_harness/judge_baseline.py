"""`judge baseline`: time the reference (eager, torch.compile, torch.compile reduce-overhead).

Each (mode, flags) pair runs in a fresh child process (`judge baseline-mode`), so nothing a mode
leaves behind (compiled graphs, CUDA graphs, changed flags, a monkey-patched torch) reaches another,
and no candidate has ever been loaded into any of them (HACKS row 19). Timing is timing.py's method
(the runner's). Results are cached per (task sha256, GPU name, track, torch version, method
version); a cached entry is reused for the modes it has.

`judge baseline-batch` does the same for many tasks at once (bench, coverage runs): torch.compile
caches are warmed for several tasks side by side (CPU work, nothing timed), then each (mode, flags)
is timed in one fresh process per mode that goes through the tasks one after another, so the
startup and compile costs are paid once per mode instead of once per task and mode. Such a process
still never loads a candidate, and compiled state is released between tasks.
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
from typing import Optional, Sequence

import torch

from . import files
from .judge_task import JudgeTask, secret_seed
from .judge_tracks import (PYTORCH_DEFAULT_FLAGS, apply_flags, baseline_flags, current_flags,
                           get_track)
from .timing import (L2Flusher, method_agreement, method_overhead, time_plain_events,
                     time_with_flush)

MODES = ("eager", "compile", "reduce-overhead")
BASELINE_VERSION = 3  # 2: time follows choose_basis; 3: method_agreement recorded
# STITCH_BASELINE_CACHE_DIR: where baselines are cached (`stitchcuda bench` points it into the bench).
DEFAULT_CACHE_DIR = (os.environ.get("STITCH_BASELINE_CACHE_DIR")
                     or os.path.join(os.path.expanduser("~"), ".cache", "stitchcuda", "baselines"))


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
    cache_only: bool = False  # report what the cache holds (and "missing"); time nothing


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


def _mode_forward(graph_dir: str, track_name: str, mode: str, flags_name: str, timing_sets: int,
                  device: torch.device, task_path: Optional[str]):
    """The task, its model compiled for `mode` under the flags, its timing input sets and a forward
    callable: what timing and warming share."""
    track = get_track(track_name)
    flags = baseline_flags(track) if flags_name == "track" else PYTORCH_DEFAULT_FLAGS
    task = JudgeTask(graph_dir, device, task_path)
    apply_flags(flags)
    model = _compile(task.model, mode)
    user_sets = [task.draw_user_inputs(secret_seed()) for _ in range(max(timing_sets, 1))]
    autocast = track.baseline_autocast_dtype if flags_name == "track" else None

    def forward(tensors):
        with torch.no_grad():
            if autocast is not None:
                with torch.autocast(device.type, dtype=autocast):
                    return model(*task.call_args(tensors))
            return model(*task.call_args(tensors))

    return task, user_sets, forward, autocast


def _first_call(forward, inputs, device: torch.device) -> float:
    started = time.perf_counter()
    forward(inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - started


def time_one_mode(graph_dir: str, track_name: str, mode: str, flags_name: str, iters: int,
                  warmup: int, timing_sets: int, device_name: str,
                  task_path: Optional[str] = None) -> dict:
    device = torch.device(device_name)
    setup_started = time.perf_counter()
    task, user_sets, forward, autocast = _mode_forward(graph_dir, track_name, mode, flags_name,
                                                       timing_sets, device, task_path)
    setup_s = time.perf_counter() - setup_started

    def refresh(index, tensors):
        task.refresh_user_inputs(tensors)  # in place, same buffers; not timed

    # The first call compiles (torch.compile is lazy): timed on its own, wall clock.
    first_call_s = _first_call(forward, user_sets[0], device)
    measure_started = time.perf_counter()
    flusher = L2Flusher(device)
    timed = time_with_flush(forward, user_sets, device, iters=iters, warmup=warmup,
                            refresh=refresh, flusher=flusher)
    plain = time_plain_events(forward, user_sets[0], device, iters=iters, warmup=warmup)
    agreement = method_agreement(forward, user_sets, device, iters=iters, warmup=warmup,
                                 refresh=refresh, flusher=flusher)
    overhead = method_overhead(device, iters=iters, warmup=warmup, flusher=flusher).as_json()
    return {
        "mode": mode,
        "flags": flags_name,
        # Where a mode's time goes: model, weights and inputs; the timing passes themselves.
        "setup_s": round(setup_s, 3),
        "measure_s": round(time.perf_counter() - measure_started, 3),
        "precision": current_flags().as_json(),
        "autocast": str(autocast) if autocast is not None else None,
        "compile_s": round(first_call_s, 3) if mode != "eager" else 0.0,
        "first_call_s": round(first_call_s, 3),
        "timing": timed.as_json(),
        "plain_events": plain.stats.as_json(),  # warm L2
        "method_agreement": agreement,  # interleaved with plain events + flush
        "method_overhead": overhead,
    }


def warm_one_task(graph_dir: str, track_name: str, modes: Sequence[str], device_name: str,
                  task_path: Optional[str] = None, calls: int = 3) -> dict:
    """Compiles each torch.compile mode and calls it a few times, timing nothing: fills
    TorchInductor's on-disk caches so that the serial timing pass (batch_time_mode) does not spend
    its time compiling. Warming runs many tasks side by side; its results are never timings."""
    device = torch.device(device_name)
    warmed = {}
    for mode in modes:
        if mode == "eager":
            continue
        _, user_sets, forward, _ = _mode_forward(graph_dir, track_name, mode, "track", 1, device,
                                                 task_path)
        started = time.perf_counter()
        for _ in range(calls):
            forward(user_sets[0])
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        warmed[mode] = round(time.perf_counter() - started, 3)
        _release_compiled_state(device)
    return {"warmed_s": warmed}


def _release_compiled_state(device: torch.device) -> None:
    """What one task leaves behind in a process that goes on to another: compiled graphs, CUDA
    graph trees and their memory pools, cached blocks."""
    import gc

    torch._dynamo.reset()
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()


def batch_time_mode(jobs: Sequence[dict], mode: str, flags_name: str, track_name: str,
                    iters: int, warmup: int, timing_sets: int, device_name: str,
                    out_dir: str) -> None:
    """time_one_mode for many tasks, one after another in this process; job i's result (or its
    error) goes to out_dir/i.json as soon as it is known, so a crash loses only the task it hit.
    Jobs: {"index", "graph_dir", "task"}."""
    device = torch.device(device_name)
    for job in jobs:
        try:
            result = time_one_mode(job["graph_dir"], track_name, mode, flags_name, iters, warmup,
                                   timing_sets, device_name, job.get("task"))
        except Exception as error:  # one task's failure is that task's result
            result = {"mode": mode, "flags": flags_name,
                      "error": f"{type(error).__name__}: {error}"[:2000]}
        files.write_json(os.path.join(out_dir, f"{job['index']}.json"), result)
        _release_compiled_state(device)


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
        started = time.monotonic()
        try:
            proc = subprocess.run(command, env=_child_env(), capture_output=True, text=True,
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


@dataclasses.dataclass
class _CachedTask:
    """One task's baseline record: what the cache holds and which (mode, flags) it still lacks."""
    graph_dir: str
    task: Optional[str]
    record: dict
    cache_path: Optional[str]
    entries: dict
    info_entries: dict
    wanted: list


def _open_task(options: BaselineOptions, graph_dir: str, task: Optional[str], gpu: str,
               torch_version: str) -> _CachedTask:
    with open(os.path.join(graph_dir, "graph.json")) as handle:
        graph = json.load(handle)
    task_sha = graph.get("task", {}).get("sha256", "")
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
    }
    return _CachedTask(graph_dir, task, record, cache_path, entries, info_entries, wanted)


def _add_result(cached: _CachedTask, mode: str, flags_name: str, result: dict) -> None:
    (cached.entries if flags_name == "track" else cached.info_entries)[mode] = result


def _store(options: BaselineOptions, cached: _CachedTask) -> None:
    """Stores what was measured so far in the cache (failed modes are not cached: the next run
    tries them again)."""
    ok = lambda table: {m: e for m, e in table.items() if "error" not in e}
    measured = cached.wanted and not options.cache_only
    if cached.cache_path and measured and (ok(cached.entries) or ok(cached.info_entries)):
        files.write_json(cached.cache_path, {**cached.record, "modes": ok(cached.entries),
                                             "pytorch_default_flags": ok(cached.info_entries)})


def _finish_task(options: BaselineOptions, cached: _CachedTask, out_path: Optional[str]) -> dict:
    """Stores what was measured in the cache and writes the selected modes to out_path."""
    record = {**cached.record, "modes": cached.entries,
              "pytorch_default_flags": cached.info_entries}
    _store(options, cached)
    selected = {**record, "modes": {m: cached.entries[m] for m in options.modes
                                    if m in cached.entries},
                "from_cache": not cached.wanted,
                "missing": [m for m, flags in cached.wanted if flags == "track"]}
    if out_path:
        files.write_json(out_path, selected)
    return selected


def run_baseline(options: BaselineOptions, out_path: str, log=print) -> dict:
    device = torch.device(options.device)
    cached = _open_task(options, options.graph_dir, options.task, _device_name(device),
                        torch.__version__)
    if options.cache_only:
        return _finish_task(options, cached, out_path)
    for mode, flags_name in cached.wanted:
        log(f"baseline: timing {mode} ({flags_name} flags) in a fresh process")
        result = _run_child(options, mode, flags_name)
        if "error" in result:
            log(f"baseline: {mode} ({flags_name}) failed: {result['error']}")
        _add_result(cached, mode, flags_name, result)
    return _finish_task(options, cached, out_path)


# ------------------------------------------------------------------------------------------------
# Many tasks: warm in parallel, then time serially, one process per (mode, flags).


def _child_env() -> dict:
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run_batch_child(options: BaselineOptions, jobs: list, mode: str, flags_name: str,
                     work_dir: str, warm_only: bool) -> tuple[int, str]:
    jobs_path = os.path.join(work_dir, "jobs.json")
    files.write_json(jobs_path, jobs)
    command = [sys.executable, "-m", "stitch_harness.judge", "baseline-batch-mode",
               "--jobs-file", jobs_path, "--out-dir", work_dir, "--track", options.track,
               "--mode", mode, "--flags", flags_name, "--iters", str(options.iters),
               "--warmup", str(options.warmup), "--timing-sets", str(options.timing_sets),
               "--device", options.device]
    if warm_only:
        command.append("--warm-only")
    timeout = options.child_timeout_s * max(len(jobs), 1)
    try:
        proc = subprocess.run(command, env=_child_env(), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:g} s"
    tail = (proc.stderr or "").strip().splitlines()[-5:]
    return proc.returncode, " | ".join(tail)


def _warm(options: BaselineOptions, tasks: list, jobs: int, log) -> None:
    """Compiles every task that lacks a torch.compile mode, `jobs` processes side by side."""
    from concurrent.futures import ThreadPoolExecutor

    compile_modes = [m for m in ("compile", "reduce-overhead") if m in options.modes]
    pending = [(i, t) for i, t in enumerate(tasks)
               if any((m, "track") in t.wanted for m in compile_modes)]
    if not pending or jobs <= 0:
        return
    log(f"baseline-batch: warming torch.compile caches for {len(pending)} tasks, {jobs} at a time")
    started = time.monotonic()

    def warm(item):
        index, cached = item
        with tempfile.TemporaryDirectory(prefix="stitch-warm-") as work:
            job = {"index": index, "graph_dir": cached.graph_dir, "task": cached.task}
            status, tail = _run_batch_child(options, [job], ",".join(compile_modes), "track",
                                            work, warm_only=True)
            if status != 0:
                log(f"baseline-batch: warming {cached.record['task']} failed ({tail}); its "
                    "timing pass will compile it")

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(warm, pending))
    log(f"baseline-batch: warmed in {time.monotonic() - started:.0f} s")


def _time_serially(options: BaselineOptions, tasks: list, mode: str, flags_name: str,
                   log) -> None:
    """One process times `mode` for every task that lacks it; a process that dies loses only the
    task it was on (recorded as that task's error) and a new one carries on with the rest."""
    remaining = [i for i, t in enumerate(tasks) if (mode, flags_name) in t.wanted]
    while remaining:
        log(f"baseline-batch: timing {mode} ({flags_name} flags) for {len(remaining)} tasks in "
            "one fresh process")
        with tempfile.TemporaryDirectory(prefix="stitch-baseline-batch-") as work:
            jobs = [{"index": i, "graph_dir": tasks[i].graph_dir, "task": tasks[i].task}
                    for i in remaining]
            status, tail = _run_batch_child(options, jobs, mode, flags_name, work,
                                            warm_only=False)
            finished = []
            for i in remaining:
                path = os.path.join(work, f"{i}.json")
                if not os.path.isfile(path):
                    break
                with open(path) as handle:
                    result = json.load(handle)
                if "error" in result:
                    log(f"baseline-batch: {tasks[i].record['task']} {mode} failed: "
                        f"{result['error'][:300]}")
                _add_result(tasks[i], mode, flags_name, result)
                finished.append(i)
        remaining = remaining[len(finished):]
        if remaining:  # the process died on remaining[0]
            lost = remaining.pop(0)
            _add_result(tasks[lost], mode, flags_name, {
                "mode": mode, "flags": flags_name,
                "error": f"the timing process died on this task (status {status}): {tail}"})
            log(f"baseline-batch: {tasks[lost].record['task']} {mode}: process died ({tail})")


def run_baseline_batch(options: BaselineOptions, graph_dirs: Sequence[str], out_dir: str,
                       warm_jobs: int = 8, log=print, warm_only: bool = False) -> list[dict]:
    """Baselines for many tasks: the cache first; for what it lacks, torch.compile caches are
    warmed `warm_jobs` tasks at a time (compiling is CPU work; nothing is timed), then each
    (mode, flags) is timed in one fresh process that goes through the tasks one after another on
    an otherwise idle GPU. out_dir/<task name>.json gets what `baseline` would have written.
    With warm_only, stops after warming (nothing timed, nothing written)."""
    device = torch.device(options.device)
    gpu, torch_version = _device_name(device), torch.__version__
    tasks = [_open_task(options, graph_dir, None, gpu, torch_version) for graph_dir in graph_dirs]
    cached_count = sum(1 for t in tasks if not t.wanted)
    log(f"baseline-batch: {len(tasks)} tasks, {cached_count} fully cached")
    _warm(options, tasks, warm_jobs, log)
    if warm_only:  # e.g. alongside other CPU work; a later run times against the warm caches
        return []
    pairs = [(m, "track") for m in options.modes] + [(m, "pytorch-default")
                                                      for m in options.info_modes]
    for mode, flags_name in pairs:
        _time_serially(options, tasks, mode, flags_name, log)
        for cached in tasks:  # an interrupted batch keeps the modes it finished
            _store(options, cached)
    os.makedirs(out_dir, exist_ok=True)
    return [_finish_task(options, t, os.path.join(out_dir, f"{t.record['task']}.json"))
            for t in tasks]
