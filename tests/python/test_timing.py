"""timing.py: statistics, the flush/rotate loop's bookkeeping, and (GPU) agreement of the methods."""

import numpy as np
import pytest
import torch

from test_judge_support import apply_marks, gpu  # noqa: F401

from stitch_harness import timing


@pytest.mark.parametrize("fraction", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_percentile_matches_numpy(fraction):
    values = sorted(np.random.default_rng(0).exponential(size=37).tolist())
    assert timing.percentile(values, fraction) == pytest.approx(
        float(np.percentile(values, fraction * 100)), rel=1e-12)


def test_stats_from_times():
    stats = timing.stats_from_times([5.0, 1.0, 3.0, 2.0, 4.0])
    assert stats.median_ms == 3.0
    assert stats.min_ms == 1.0
    assert stats.p10_ms == pytest.approx(1.4)
    assert stats.p90_ms == pytest.approx(4.6)
    assert stats.iterations == 5
    assert timing.stats_from_times([]).iterations == 0


def test_median_is_not_moved_by_one_outlier():
    stats = timing.stats_from_times([1.0] * 20 + [0.0001])
    assert stats.median_ms == 1.0


def test_flush_loop_rotates_refreshes_and_observes_on_cpu():
    sets = [[torch.zeros(4)] for _ in range(3)]
    refreshed, called, observed = [], [], []

    def refresh(index, tensors):
        refreshed.append(index)
        tensors[0].fill_(len(refreshed))

    def fn(tensors):
        called.append(float(tensors[0][0]))
        return tensors[0] * 2

    def observe(iteration, inputs, outputs):
        observed.append((iteration, float(inputs[0][0]), float(outputs[0])))

    run = timing.time_with_flush(fn, sets, torch.device("cpu"), iters=7, warmup=2,
                                 refresh=refresh, observe_iterations=[0, 4], observe=observe)
    assert run.stats.iterations == 7 and len(run.gpu_ms) == 7 and len(run.wall_ms) == 7
    assert refreshed == [step % 3 for step in range(9)]  # every step, warm-up included
    # fn always sees the values refresh just wrote: re-randomization precedes each call.
    assert called == [float(step + 1) for step in range(9)]
    assert [o[0] for o in observed] == [0, 4]
    for iteration, value, output in observed:
        assert value == float(iteration + 2 + 1) and output == 2 * value
    assert any("wall clock" in note for note in run.notes)


def test_plain_events_counts_iterations_on_cpu():
    calls = []
    run = timing.time_plain_events(lambda x: calls.append(1), None, torch.device("cpu"),
                                   iters=4, warmup=3)
    assert len(calls) == 7 and run.stats.iterations == 4


def test_timed_run_json_has_stats_and_raw_times():
    run = timing.time_plain_events(lambda x: None, None, torch.device("cpu"), iters=3, warmup=0)
    as_json = run.as_json()
    assert set(as_json["stats"]) == {"median_ms", "p10_ms", "p90_ms", "min_ms", "iterations"}
    assert len(as_json["gpu_ms"]) == 3
    assert "gpu_ms" not in run.as_json(include_raw=False)


@apply_marks(gpu)
def test_flush_method_agrees_with_plain_events_on_a_large_gemm():
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    sets = [[torch.randn(4096, 4096, device=device), torch.randn(4096, 4096, device=device)]
            for _ in range(2)]
    fn = lambda s: s[0] @ s[1]  # noqa: E731
    flushed = timing.time_with_flush(fn, sets, device, iters=20, warmup=3)
    plain = timing.time_plain_events(fn, sets[0], device, iters=20, warmup=3)
    ratio = flushed.stats.median_ms / plain.stats.median_ms
    assert 0.9 <= ratio <= 1.1, (flushed.stats, plain.stats)
    assert flushed.notes == []  # persisting-L2 reset worked


@apply_marks(gpu)
def test_side_stream_work_is_counted():
    device = torch.device("cuda")
    a = torch.randn(4096, 4096, device=device)
    side = torch.cuda.Stream(device)

    def on_side_stream(_):
        with torch.cuda.stream(side):  # never joined into the current stream
            for _ in range(4):
                a @ a

    flushed = timing.time_with_flush(on_side_stream, [()], device, iters=5, warmup=1)
    plain = timing.time_plain_events(on_side_stream, (), device, iters=5, warmup=1)
    assert flushed.stats.median_ms > 4 * plain.stats.median_ms
    assert flushed.basis == "synced", flushed.notes


@apply_marks(gpu)
def test_flush_method_agrees_with_plain_events_on_a_small_eager_model():
    # ~0.1 ms of small launches: the synchronize's ~13 us must not leak into the reported time.
    # Both sides flush L2 (the protocol's cold-cache choice) and run interleaved call by call;
    # what is compared is the method's machinery.
    device = torch.device("cuda")
    torch.backends.cuda.matmul.allow_tf32 = False
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                torch.nn.Linear(1024, 256)).to(device)
    sets = [[torch.randn(64, 512, device=device)] for _ in range(3)]
    fn = lambda s: model(s[0])  # noqa: E731
    with torch.no_grad():
        flushed = timing.time_with_flush(fn, sets, device, iters=50, warmup=5)
        agreement = timing.method_agreement(fn, sets, device, iters=50, warmup=5)
    assert flushed.basis == "stream", flushed.notes
    assert 0.9 <= agreement["ratio"] <= 1.1, agreement


def test_choose_basis_prefers_the_stream_time_when_the_gap_is_the_sync_cost():
    stream = [0.100, 0.101, 0.099]
    synced = [0.113, 0.115, 0.112]
    assert timing.choose_basis(stream, synced, [0.013, 0.014, 0.012])[0] == "stream"


def test_choose_basis_counts_work_that_outlives_the_stream():
    stream = [0.100, 0.101, 0.099]
    synced = [0.300, 0.310, 0.305]  # 0.2 ms of work after the stream's end event
    basis, excess = timing.choose_basis(stream, synced, [0.013, 0.014, 0.012])
    assert basis == "synced" and excess > 0.18


def test_choose_basis_without_the_sync_cost_uses_the_synced_time():
    assert timing.choose_basis([0.1], [0.11], [])[0] == "synced"
    assert timing.choose_basis([0.1, 0.2], [0.11], [0.01])[0] == "synced"


def test_choose_basis_threshold_is_the_larger_of_10us_and_10_percent():
    # 1 ms stream: 10% = 100 us allowed; an excess of 90 us stays on the stream basis.
    assert timing.choose_basis([1.0], [1.103], [0.013])[0] == "stream"
    assert timing.choose_basis([1.0], [1.123], [0.013])[0] == "synced"


def test_method_agreement_interleaves_both_methods_on_cpu():
    calls = []
    sets = [[1], [2]]
    result = timing.method_agreement(lambda s: calls.append(s[0]), sets, torch.device("cpu"),
                                     iters=4, warmup=1)
    # protocol on the rotating set, plain on set 0, alternately: 5 steps x 2 calls.
    assert calls == [1, 1, 2, 1, 1, 1, 2, 1, 1, 1]
    assert result["interleaved"] and result["iterations"] == 4
    assert result["protocol_median_ms"] >= 0 and result["plain_flushed_median_ms"] >= 0
