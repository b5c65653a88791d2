"""`python -m stitch_harness.profile_reference`: profile one forward of a task's PyTorch reference.

The model is built the KernelBench way (task_loader), warmed up, then one forward runs under
torch.profiler with CUDA activities (after an L2 flush, like every timed call of the runner's).
The kernels it launched, their times on a timeline relative to the forward's start, the gaps
between GPU activities and GPU busy time against the forward's wall time are written as
profile.json in the schema of src/verify/profile/profile_report.h (source "torch.profiler"), so the
Planner can set the reference's kernels beside a candidate's.

There are no hardware counters here: a kernel's bottleneck is `launch_host` when the forward's GPU
busy share is under 50% and the idle time before the kernel is at least its run time (rule 1 of
src/verify/profile/profile_rules.h), else `unknown`; dram_pct / sm_pct / occupancy_pct are absent.

With --device cpu (tests, machines without a GPU) the forward's top-level CPU operators stand in
for kernels and gpu_busy_ms is null.

Exit codes: 0 written, 1 failure (one line on stderr), 2 bad usage or not a task.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Iterable, Optional

LAUNCH_BUSY_SHARE_MAX = 0.5  # profile_rules.h BottleneckRules::launch_busy_share_max
FORWARD_RANGE = "stitch_forward"


def classify_type(name: str) -> str:
    if name.startswith("Memcpy"):
        return "memcpy"
    if name.startswith("Memset"):
        return "memset"
    return "kernel"


def summarize(events: Iterable[dict], forward_start_ns: int, forward_end_ns: int,
              gpu_timeline: bool = True) -> dict:
    """The profile.json fields that come from the trace.

    events: {"type": "kernel"|"memcpy"|"memset", "name", "start_ns", "end_ns", "stream_id"}, on the
    same clock as the forward's bounds. Events that start outside the forward are left out.
    """
    forward_ns = max(0, forward_end_ns - forward_start_ns)
    inside = sorted((e for e in events if forward_start_ns <= e["start_ns"] <= forward_end_ns),
                    key=lambda e: e["start_ns"])
    timeline = []
    covered_until = 0
    busy = 0
    gap_count = 0
    largest_gap = 0
    leading_gap = forward_ns
    kernel_ns = {"kernel": 0, "memcpy": 0, "memset": 0}
    for index, event in enumerate(inside):
        start = event["start_ns"] - forward_start_ns
        end = min(max(event["end_ns"], event["start_ns"]) - forward_start_ns, forward_ns)
        end = max(end, start)
        gap = start - covered_until if start > covered_until else 0
        if index == 0:
            leading_gap = gap
        elif gap > 0:
            gap_count += 1
            largest_gap = max(largest_gap, gap)
        busy += end - start if start >= covered_until else max(0, end - covered_until)
        covered_until = max(covered_until, end)
        kernel_ns[event["type"]] += end - start
        timeline.append({"type": event["type"], "name": event["name"], "start_ns": start,
                         "end_ns": end, "gap_before_ns": gap, "bytes": 0,
                         "stream_id": event.get("stream_id", 0)})
    trailing_gap = max(0, forward_ns - covered_until) if inside else 0
    share = busy / forward_ns if forward_ns > 0 else 0.0

    by_name: dict[str, dict] = {}
    for entry in timeline:
        if entry["type"] != "kernel":
            continue
        kernel = by_name.setdefault(entry["name"], {"name": entry["name"], "launches": 0,
                                                    "total_ns": 0, "gap_ns": 0,
                                                    "stream_id": entry["stream_id"]})
        kernel["launches"] += 1
        kernel["total_ns"] += entry["end_ns"] - entry["start_ns"]
        kernel["gap_ns"] += entry["gap_before_ns"]

    kernels = []
    time_by_class: dict[str, float] = {}
    for kernel in sorted(by_name.values(), key=lambda k: -k["total_ns"]):
        mean_ns = kernel["total_ns"] / kernel["launches"]
        mean_gap = kernel["gap_ns"] / kernel["launches"]
        if gpu_timeline and share < LAUNCH_BUSY_SHARE_MAX and mean_gap >= mean_ns and mean_gap > 0:
            bottleneck = "launch_host"
            reason = (f"GPU busy {100 * share:.0f}% of the forward; {mean_gap / 1e3:.1f} us idle "
                      f"before each launch vs {mean_ns / 1e3:.1f} us of work")
        else:
            bottleneck, reason = "unknown", "no hardware counters (torch.profiler)"
        time_by_class[bottleneck] = time_by_class.get(bottleneck, 0) + kernel["total_ns"]
        kernels.append({
            "name": kernel["name"], "mangled_name": "", "launches": kernel["launches"],
            "duration_ms": kernel["total_ns"] / 1e6, "mean_ms": mean_ns / 1e6,
            "share_pct": 100 * kernel["total_ns"] / forward_ns if forward_ns else 0.0,
            "mean_gap_before_ms": mean_gap / 1e6, "stream_id": kernel["stream_id"],
            "bottleneck": bottleneck, "bottleneck_reason": reason,
            "counters": None, "roofline": None,
        })

    if gpu_timeline and forward_ns > 0 and share < LAUNCH_BUSY_SHARE_MAX:
        forward_bottleneck = "launch_host"
        forward_reason = f"GPU busy only {100 * share:.0f}% of the forward's wall time"
    elif time_by_class:
        forward_bottleneck = max(time_by_class, key=time_by_class.get)
        forward_reason = "the class holding the most kernel time"
    else:
        forward_bottleneck, forward_reason = "unknown", "no kernel time"
    return {
        "forward_ms": forward_ns / 1e6,
        "gpu_busy_ms": busy / 1e6 if gpu_timeline else None,
        "gpu_busy_share": share if gpu_timeline else None,
        "idle_ms": (forward_ns - busy) / 1e6 if gpu_timeline else None,
        "kernel_ms": kernel_ns["kernel"] / 1e6,
        "copy_ms": kernel_ns["memcpy"] / 1e6,
        "memset_ms": kernel_ns["memset"] / 1e6,
        "gaps": {"count": gap_count, "largest_ms": largest_gap / 1e6,
                 "leading_ms": leading_gap / 1e6, "trailing_ms": trailing_gap / 1e6},
        "forward_bottleneck": forward_bottleneck,
        "forward_bottleneck_reason": forward_reason,
        "kernels": kernels,
        "timeline": timeline,
    }


def _ns(microseconds: float) -> int:
    return int(round(microseconds * 1000))


def trace_events(prof, device_type: str):
    """(events, forward_start_ns, forward_end_ns) from a finished torch.profiler.profile."""
    import torch

    function_events = prof.events()
    cpu = torch.autograd.DeviceType.CPU
    # The host-side range: with CUDA activities kineto adds a GPU-side annotation of the same name.
    forward = next((e for e in function_events
                    if e.name == FORWARD_RANGE and e.device_type == cpu), None)
    if forward is None:
        raise RuntimeError(f"the profiler recorded no '{FORWARD_RANGE}' range")
    start, end = _ns(forward.time_range.start), _ns(forward.time_range.end)
    events = []
    for event in function_events:
        if device_type == "cuda":
            if (event.device_type != torch.autograd.DeviceType.CUDA
                    or event.name == FORWARD_RANGE
                    or getattr(event, "is_user_annotation", False)):
                continue
        elif event.cpu_parent is not forward:  # CPU: the forward's top-level operators
            continue
        events.append({"type": classify_type(event.name) if device_type == "cuda" else "kernel",
                       "name": event.name, "start_ns": _ns(event.time_range.start),
                       "end_ns": _ns(event.time_range.end),
                       # device_resource_id is the stream of a GPU event (a thread on the CPU)
                       "stream_id": int(getattr(event, "device_resource_id", 0) or 0)
                       if device_type == "cuda" else 0})
    return events, start, end


def profile_reference(task_path: str, device_name: str = "cuda", warmup: int = 3, seed: int = 42,
                      track_name: str = "fp32", inference: bool = False,
                      mode: str = "eager") -> dict:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    from .judge_tracks import apply_flags, baseline_flags, get_track
    from .task_inputs import real_inputs
    from .task_loader import build_model, load_task
    from .timing import L2Flusher

    device = torch.device(device_name)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("no CUDA device: torch.cuda.is_available() is False")
    track = get_track(track_name)
    apply_flags(baseline_flags(track))
    task = load_task(task_path)
    model, _ = build_model(task, seed, inference)
    model = model.to(device)
    if mode == "compile":
        model = torch.compile(model)
    inputs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in real_inputs(task, seed)]
    autocast = track.baseline_autocast_dtype if device.type == "cuda" else None

    def forward():
        with torch.no_grad():
            if autocast is not None:
                with torch.autocast(device.type, dtype=autocast):
                    return model(*inputs)
            return model(*inputs)

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(max(warmup, 1)):  # the first call pays for lazy initialisation
        forward()
    synchronize()
    flusher = L2Flusher(device)
    flusher.flush()
    synchronize()
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    wall_start = time.perf_counter_ns()
    with profile(activities=activities) as prof:
        with record_function(FORWARD_RANGE):
            forward()
            synchronize()
    wall_ns = time.perf_counter_ns() - wall_start
    events, start, end = trace_events(prof, device.type)
    doc = {"format": "stitchcuda.profile", "version": 1, "source": "torch.profiler",
           "program": task.path, "mode": mode, "track": track.name,
           "torch_version": torch.__version__}
    doc.update(summarize(events, start, end, gpu_timeline=device.type == "cuda"))
    notes = []
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        doc["device"] = {"name": props.name, "sm_count": props.multi_processor_count,
                         "peaks": None}
        if not any(e["type"] == "kernel" for e in events):
            notes.append("the profiler saw no CUDA kernel in the forward (is CUPTI available "
                         "to torch?)")
    else:
        doc["device"] = {"name": "cpu", "sm_count": 0, "peaks": None}
        notes.append("device cpu: the forward's top-level CPU operators are listed as kernels")
    doc["profiled_wall_ms"] = wall_ns / 1e6
    doc["api"] = {}
    doc["cupti"] = {"available": device.type == "cuda", "detail": "torch.profiler (kineto)"}
    doc["ncu"] = {"attempted": False, "path": "", "detail": "not run on the reference",
                  "metrics": [], "profiled": 0}
    doc["notes"] = notes
    return doc


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m stitch_harness.profile_reference",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True, metavar="TASK.py")
    parser.add_argument("--out", required=True, metavar="PROFILE.json")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (cuda)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--track", default="fp32", choices=("fp32", "tf32", "bf16"))
    parser.add_argument("--mode", default="eager", choices=("eager", "compile"))
    parser.add_argument("--inference", action="store_true", help="model.eval() before profiling")
    return parser


def main(argv: Optional[list] = None) -> int:
    args = build_parser().parse_args(argv)
    from . import files
    from .errors import CaptureError, exit_code
    from .runtime import quiet_torch

    quiet_torch()
    try:
        doc = profile_reference(args.task, args.device, args.warmup, args.seed, args.track,
                                args.inference, args.mode)
    except CaptureError as error:
        print(f"error: {args.task}: {error}", file=sys.stderr)
        return exit_code(error.category)
    except Exception as error:  # one line, as the CLI promises
        print(f"error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    files.write_json(args.out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
