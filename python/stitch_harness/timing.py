"""The timing method shared by baselines and eval-kb (DESIGN.md §6, verify-protocol.md "Timing").

`time_with_flush` is the verifier's method: warm-up; then each iteration re-randomizes the input set
it will use (not timed), flushes L2 by writing a buffer of twice its size, resets persisting L2,
records a start event on the current stream, runs the function, records a stream-end event,
synchronizes the whole device (so work on side streams lands), records a synced-end event. Inputs
rotate among several sets. Which time is reported follows the runner's rule
(src/verify/timing_basis.h): the caller's-stream time, unless the device went idle measurably later
than the stream — beyond the synchronize's own cost, measured on empty calls — in which case the
synced time, which counts work outside the stream.
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
    gpu_ms: list[float]  # the reported basis's per-iteration times
    wall_ms: list[float]
    stats: TimingStats   # of gpu_ms
    wall_stats: TimingStats
    method: str
    notes: list[str]
    basis: str = "stream"  # "stream" | "synced" (choose_basis)
    stream_ms: list[float] = dataclasses.field(default_factory=list)
    synced_ms: list[float] = dataclasses.field(default_factory=list)
    empty_gap_ms: list[float] = dataclasses.field(default_factory=list)

    def as_json(self, include_raw: bool = True) -> dict:
        out = {"method": self.method, "basis": self.basis, "stats": self.stats.as_json(),
               "wall_stats": self.wall_stats.as_json(), "notes": self.notes}
        if self.synced_ms:
            out["synced_stats"] = stats_from_times(self.synced_ms).as_json()
            out["stream_stats"] = stats_from_times(self.stream_ms).as_json()
        if include_raw:
            out["gpu_ms"] = self.gpu_ms
            out["wall_ms"] = self.wall_ms
            out["stream_ms"] = self.stream_ms
            out["synced_ms"] = self.synced_ms
            out["empty_gap_ms"] = self.empty_gap_ms
        return out


# The same thresholds as src/verify/timing_basis.h.
OFF_STREAM_MIN_MS = 0.010
OFF_STREAM_FRACTION = 0.10


def choose_basis(stream_ms: Sequence[float], synced_ms: Sequence[float],
                 empty_gap_ms: Sequence[float]) -> tuple[str, float]:
    """("stream" | "synced", excess gap in ms): the runner's rule (timing_basis.h)."""
    if not stream_ms or len(stream_ms) != len(synced_ms) or not empty_gap_ms:
        return "synced", 0.0
    gaps = [b - a for a, b in zip(stream_ms, synced_ms)]
    excess = (stats_from_times(gaps).median_ms - stats_from_times(empty_gap_ms).median_ms)
    allowed = max(OFF_STREAM_MIN_MS, OFF_STREAM_FRACTION * stats_from_times(stream_ms).median_ms)
    return ("synced" if excess > allowed else "stream"), excess


def _empty_sync_gaps(device: torch.device, flusher: "L2Flusher", calls: int = 20) -> list[float]:
    """Stream-end to after-synchronize event on calls that launch nothing (the runner's method)."""
    gaps = []
    stream = torch.cuda.current_stream(device)
    for _ in range(calls):
        flusher.flush()
        _synchronize(device)
        stream_end = torch.cuda.Event(enable_timing=True)
        synced_end = torch.cuda.Event(enable_timing=True)
        stream_end.record(stream)
        _synchronize(device)
        synced_end.record(stream)
        synced_end.synchronize()
        gaps.append(stream_end.elapsed_time(synced_end))
    return gaps


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# fn(inputs) -> outputs; refresh(set_index, inputs) re-randomizes a set in place;
# observe(iteration, inputs, outputs) sees chosen timed iterations (spot checks), not timed.
TimedFunction = Callable[[Any], Any]
Refresh = Callable[[int, Any], None]
Observe = Callable[[int, Any, Any], None]


@dataclasses.dataclass
class _Iteration:
    stream_ms: float
    synced_ms: float
    wall_ms: float
    outputs: Any


def _protocol_iteration(fn: TimedFunction, inputs: Any, device: torch.device,
                        flusher: L2Flusher) -> _Iteration:
    """One timed call of the verifier's method (inputs already refreshed): flush, start event,
    call, stream-end event, device-wide synchronize, synced-end event."""
    flusher.flush()
    _synchronize(device)
    on_gpu = device.type == "cuda"
    if on_gpu:
        stream = torch.cuda.current_stream(device)
        start = torch.cuda.Event(enable_timing=True)
        stream_end = torch.cuda.Event(enable_timing=True)
        synced_end = torch.cuda.Event(enable_timing=True)
        start.record(stream)
    wall_start = time.perf_counter()
    outputs = fn(inputs)
    if on_gpu:
        stream_end.record(stream)
    _synchronize(device)  # device-wide: side-stream work lands before the synced event
    wall = (time.perf_counter() - wall_start) * 1e3
    if not on_gpu:
        return _Iteration(wall, wall, wall, outputs)
    synced_end.record(stream)
    synced_end.synchronize()
    return _Iteration(start.elapsed_time(stream_end), start.elapsed_time(synced_end), wall, outputs)


def _plain_iteration(fn: TimedFunction, inputs: Any, device: torch.device,
                     flusher: Optional[L2Flusher]) -> tuple[float, float]:
    """One call of the textbook method: events around the call on the current stream.
    Returns (event ms, wall ms up to the synchronize's return)."""
    if flusher is not None:
        flusher.flush()
        _synchronize(device)
    on_gpu = device.type == "cuda"
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
    wall = (time.perf_counter() - wall_start) * 1e3
    del outputs
    return (start.elapsed_time(end) if on_gpu else wall), wall


def time_with_flush(fn: TimedFunction, input_sets: Sequence[Any], device: torch.device,
                    iters: int = 50, warmup: int = 5, refresh: Optional[Refresh] = None,
                    observe_iterations: Sequence[int] = (), observe: Optional[Observe] = None,
                    flusher: Optional[L2Flusher] = None) -> TimedRun:
    if not input_sets:
        raise ValueError("time_with_flush needs at least one input set")
    flusher = flusher or L2Flusher(device)
    observed = set(observe_iterations)
    stream_ms: list[float] = []
    synced_ms: list[float] = []
    wall_ms: list[float] = []
    on_gpu = device.type == "cuda"
    empty_gaps = _empty_sync_gaps(device, flusher) if on_gpu else []
    for step in range(warmup + iters):
        set_index = step % len(input_sets)
        inputs = input_sets[set_index]
        if refresh is not None:
            refresh(set_index, inputs)
        timed = _protocol_iteration(fn, inputs, device, flusher)
        iteration = step - warmup
        if iteration < 0:
            continue
        wall_ms.append(timed.wall_ms)
        stream_ms.append(timed.stream_ms)
        synced_ms.append(timed.synced_ms)
        if observe is not None and iteration in observed:
            observe(iteration, inputs, timed.outputs)
        del timed
    notes = []
    if flusher.persisting_reset_error:
        notes.append(f"persisting-L2 reset unavailable: {flusher.persisting_reset_error}")
    if on_gpu:
        basis, excess = choose_basis(stream_ms, synced_ms, empty_gaps)
        if basis == "synced":
            notes.append(f"device idle {excess:.3f} ms after the caller's stream (median, beyond "
                         "the synchronize's cost): work outside the stream; synced time reported")
    else:
        basis = "stream"
        notes.append("CPU device: times are wall clock")
    chosen = stream_ms if basis == "stream" else synced_ms
    return TimedRun(chosen, wall_ms, stats_from_times(chosen), stats_from_times(wall_ms),
                    "flush+rotate+device-sync", notes, basis, stream_ms, synced_ms, empty_gaps)


def method_agreement(fn: TimedFunction, input_sets: Sequence[Any], device: torch.device,
                     iters: int = 50, warmup: int = 5, refresh: Optional[Refresh] = None,
                     flusher: Optional[L2Flusher] = None) -> dict:
    """The verifier's method against plain CUDA events (both with the L2 flush), interleaved call
    by call so clock drift and warm-up hit both alike. Returns both medians and their ratio: how
    much the method's machinery (rotation, re-randomization, device-wide synchronize) changes the
    time it reports."""
    flusher = flusher or L2Flusher(device)
    protocol: list[float] = []
    plain: list[float] = []
    for step in range(warmup + iters):
        set_index = step % len(input_sets)
        inputs = input_sets[set_index]
        if refresh is not None:
            refresh(set_index, inputs)
        protocol_ms = _protocol_iteration(fn, inputs, device, flusher).stream_ms
        plain_ms = _plain_iteration(fn, input_sets[0], device, flusher)[0]
        if step >= warmup:
            protocol.append(protocol_ms)
            plain.append(plain_ms)
    protocol_median = stats_from_times(protocol).median_ms
    plain_median = stats_from_times(plain).median_ms
    return {"protocol_median_ms": protocol_median, "plain_flushed_median_ms": plain_median,
            "ratio": protocol_median / plain_median if plain_median > 0 else None,
            "iterations": iters, "interleaved": True}


def time_plain_events(fn: TimedFunction, inputs: Any, device: torch.device, iters: int = 50,
                      warmup: int = 5, flusher: Optional[L2Flusher] = None) -> TimedRun:
    """Events around each call on the current stream: no rotation, no re-randomization, no
    device-wide synchronize inside the timed region. With `flusher`, L2 is flushed before each call
    (not timed); without, warm-L2 times."""
    pairs = [_plain_iteration(fn, inputs, device, flusher) for _ in range(warmup + iters)][warmup:]
    times = [gpu for gpu, _ in pairs]
    walls = [wall for _, wall in pairs]
    notes = [] if device.type == "cuda" else ["CPU device: times are wall clock"]
    return TimedRun(times, walls, stats_from_times(times), stats_from_times(walls),
                    "plain-events", notes)


def method_overhead(device: torch.device, iters: int = 50, warmup: int = 5,
                    flusher: Optional[L2Flusher] = None) -> TimingStats:
    """`time_with_flush` applied to a call that does nothing: the fixed cost the method adds to a
    reported time (start to stream-end event around nothing). Recorded beside timings so sub-50-us
    results can be read correctly; it is the same for a baseline and a candidate."""
    return time_with_flush(lambda inputs: None, [()], device, iters=iters, warmup=warmup,
                           flusher=flusher).stats
