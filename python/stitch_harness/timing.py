"""The timing method shared by baselines and eval-kb (DESIGN.md §6, verify-protocol.md "Timing").

`time_with_flush` is the verifier's method: warm-up; then each iteration re-randomizes the input set
it will use (not timed), flushes L2 by writing a buffer of twice its size, resets persisting L2,
records a start event on the current stream, runs the function, synchronizes the whole device (so
work on side streams counts), records the end event, and reads it. Inputs rotate among several sets.
`time_plain_events` is the textbook loop (events around the call, no flush, no rotation), kept so the
two can be checked against each other.

On a CPU device both fall back to the wall clock, so tests and `--device cpu` runs work.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Callable, Optional, Sequence

import torch

from . import judge_cuda_driver as driver


@dataclasses.dataclass
class TimingStats:
    median_ms: float = 0.0
    p10_ms: float = 0.0
    p90_ms: float = 0.0
    min_ms: float = 0.0
    iterations: int = 0

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on an ascending sequence."""
    if not sorted_values:
        return math.nan
    position = fraction * (len(sorted_values) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    weight = position - lower
    return sorted_values[lower] * (1.0 - weight) + sorted_values[upper] * weight


def stats_from_times(times_ms: Sequence[float]) -> TimingStats:
    ordered = sorted(float(t) for t in times_ms)
    if not ordered:
        return TimingStats()
    return TimingStats(median_ms=percentile(ordered, 0.5), p10_ms=percentile(ordered, 0.1),
                       p90_ms=percentile(ordered, 0.9), min_ms=ordered[0],
                       iterations=len(ordered))


class L2Flusher:
    """Evicts L2 between iterations: writes a buffer of twice the L2 size and resets persisting L2."""

    def __init__(self, device: torch.device):
        self.device = device
        self.persisting_reset_error: Optional[str] = None
        self.buffer: Optional[torch.Tensor] = None
        if device.type == "cuda":
            l2_bytes = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0))
            # 2x L2; 256 MiB if the property is missing (larger than any current L2).
            size = 2 * l2_bytes if l2_bytes > 0 else 256 << 20
            self.buffer = torch.empty(size, dtype=torch.uint8, device=device)
        self._fill = 0

    def flush(self) -> None:
        if self.buffer is None:
            return
        self._fill = (self._fill + 1) & 0xFF
        self.buffer.fill_(self._fill)
        if self.persisting_reset_error is None:
            try:
                driver.reset_persisting_l2(torch.cuda.current_stream(self.device).cuda_stream)
            except Exception as error:  # recorded once; timing goes on without it
                self.persisting_reset_error = str(error)


@dataclasses.dataclass
class TimedRun:
    gpu_ms: list[float]
    wall_ms: list[float]
    stats: TimingStats
    wall_stats: TimingStats
    method: str
    notes: list[str]

    def as_json(self, include_raw: bool = True) -> dict:
        out = {"method": self.method, "stats": self.stats.as_json(),
               "wall_stats": self.wall_stats.as_json(), "notes": self.notes}
        if include_raw:
            out["gpu_ms"] = self.gpu_ms
            out["wall_ms"] = self.wall_ms
        return out


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# fn(inputs) -> outputs; refresh(set_index, inputs) re-randomizes a set in place;
# observe(iteration, inputs, outputs) sees chosen timed iterations (spot checks), not timed.
TimedFunction = Callable[[Any], Any]
Refresh = Callable[[int, Any], None]
Observe = Callable[[int, Any, Any], None]


def time_with_flush(fn: TimedFunction, input_sets: Sequence[Any], device: torch.device,
                    iters: int = 50, warmup: int = 5, refresh: Optional[Refresh] = None,
                    observe_iterations: Sequence[int] = (), observe: Optional[Observe] = None,
                    flusher: Optional[L2Flusher] = None) -> TimedRun:
    if not input_sets:
        raise ValueError("time_with_flush needs at least one input set")
    flusher = flusher or L2Flusher(device)
    observed = set(observe_iterations)
    gpu_ms: list[float] = []
    wall_ms: list[float] = []
    on_gpu = device.type == "cuda"
    for step in range(warmup + iters):
        set_index = step % len(input_sets)
        inputs = input_sets[set_index]
        if refresh is not None:
            refresh(set_index, inputs)
        flusher.flush()
        _synchronize(device)
        if on_gpu:
            stream = torch.cuda.current_stream(device)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record(stream)
        wall_start = time.perf_counter()
        outputs = fn(inputs)
        _synchronize(device)  # device-wide: side-stream work lands before the end event
        wall_end = time.perf_counter()
        if on_gpu:
            end.record(stream)
            end.synchronize()
        iteration = step - warmup
        if iteration < 0:
            continue
        wall = (wall_end - wall_start) * 1e3
        wall_ms.append(wall)
        gpu_ms.append(start.elapsed_time(end) if on_gpu else wall)
        if observe is not None and iteration in observed:
            observe(iteration, inputs, outputs)
        del outputs
    notes = []
    if flusher.persisting_reset_error:
        notes.append(f"persisting-L2 reset unavailable: {flusher.persisting_reset_error}")
    if not on_gpu:
        notes.append("CPU device: times are wall clock")
    return TimedRun(gpu_ms, wall_ms, stats_from_times(gpu_ms), stats_from_times(wall_ms),
                    "flush+rotate+device-sync", notes)


def time_plain_events(fn: TimedFunction, inputs: Any, device: torch.device, iters: int = 50,
                      warmup: int = 5) -> TimedRun:
    """Events around each call on the current stream, no flush, no rotation, no re-randomization."""
    gpu_ms: list[float] = []
    wall_ms: list[float] = []
    on_gpu = device.type == "cuda"
    for step in range(warmup + iters):
        if on_gpu:
            stream = torch.cuda.current_stream(device)
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record(stream)
        wall_start = time.perf_counter()
        outputs = fn(inputs)
        if on_gpu:
            end.record(stream)
        _synchronize(device)
        wall_end = time.perf_counter()
        del outputs
        if step < warmup:
            continue
        wall = (wall_end - wall_start) * 1e3
        wall_ms.append(wall)
        gpu_ms.append(start.elapsed_time(end) if on_gpu else wall)
    return TimedRun(gpu_ms, wall_ms, stats_from_times(gpu_ms), stats_from_times(wall_ms),
                    "plain-events", [] if on_gpu else ["CPU device: times are wall clock"])


def method_overhead(device: torch.device, iters: int = 50, warmup: int = 5,
                    flusher: Optional[L2Flusher] = None) -> TimingStats:
    """`time_with_flush` applied to a call that does nothing: the fixed cost the method adds (the
    device-wide synchronize before the end event; ~13 us on an H200). Recorded beside timings so
    sub-50-us results can be read correctly; it is the same for a baseline and a candidate."""
    return time_with_flush(lambda inputs: None, [()], device, iters=iters, warmup=warmup,
                           flusher=flusher).stats
