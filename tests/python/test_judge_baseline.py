"""judge baseline: fresh processes per mode, the cache, the result file."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_judge_support import apply_marks, capture_task, gpu, subprocess_env  # noqa: F401

from stitch_harness.judge_baseline import cache_key


@pytest.fixture(scope="module")
def mlp_dir(tmp_path_factory):
    return capture_task("mlp.py", str(tmp_path_factory.mktemp("captures")))


def run_baseline(graph_dir, out, cache_dir, device="cpu", modes="eager", info_modes="",
                 extra=()):
    command = [sys.executable, "-m", "stitch_harness.judge", "baseline", "--graph-dir", graph_dir,
               "--track", "fp32", "--out", str(out), "--modes", modes, "--info-modes",
               info_modes, "--iters", "5", "--warmup", "1", "--timing-sets", "2", "--device",
               device, "--cache-dir", str(cache_dir), *extra]
    return subprocess.run(command, capture_output=True, text=True, env=subprocess_env(),
                          timeout=1200)


def test_cache_key_depends_on_every_part():
    base = cache_key("sha", "H200", "fp32", "2.11")
    assert len({base, cache_key("sha2", "H200", "fp32", "2.11"),
                cache_key("sha", "H100", "fp32", "2.11"), cache_key("sha", "H200", "tf32", "2.11"),
                cache_key("sha", "H200", "fp32", "2.12")}) == 5


def test_eager_baseline_on_cpu_is_cached(mlp_dir, tmp_path):
    cache = tmp_path / "cache"
    first = run_baseline(mlp_dir, tmp_path / "b1.json", cache, info_modes="eager")
    assert first.returncode == 0, first.stderr
    result = json.loads((tmp_path / "b1.json").read_text())
    assert result["from_cache"] is False
    assert list(result["modes"]) == ["eager"]
    eager = result["modes"]["eager"]
    assert eager["timing"]["stats"]["iterations"] == 5 and eager["timing"]["stats"]["median_ms"] > 0
    assert eager["precision"] == {"matmul_allow_tf32": False, "cudnn_allow_tf32": False}
    assert result["pytorch_default_flags"]["eager"]["precision"]["cudnn_allow_tf32"] is True
    assert result["track"] == "fp32" and result["gpu"] == "cpu"
    assert len(os.listdir(cache)) == 1

    second = run_baseline(mlp_dir, tmp_path / "b2.json", cache, info_modes="eager")
    assert second.returncode == 0, second.stderr
    cached = json.loads((tmp_path / "b2.json").read_text())
    assert cached["from_cache"] is True
    assert cached["modes"] == result["modes"]
    assert "fresh process" not in second.stderr

    uncached = run_baseline(mlp_dir, tmp_path / "b3.json", cache, extra=["--no-cache"])
    assert json.loads((tmp_path / "b3.json").read_text())["from_cache"] is False
    assert "fresh process" in uncached.stderr


def test_cache_dir_defaults_to_stitch_baseline_cache_dir(mlp_dir, tmp_path):
    # `stitchcuda bench` sets it so that its batch and its verifications share the bench's cache.
    cache = tmp_path / "bench-baselines"
    command = [sys.executable, "-m", "stitch_harness.judge", "baseline", "--graph-dir", mlp_dir,
               "--track", "fp32", "--out", str(tmp_path / "b.json"), "--modes", "eager",
               "--info-modes", "", "--iters", "3", "--warmup", "1", "--timing-sets", "2",
               "--device", "cpu"]
    env = {**subprocess_env(), "STITCH_BASELINE_CACHE_DIR": str(cache)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stderr
    assert len(os.listdir(cache)) == 1


def test_unknown_mode_is_a_usage_error(mlp_dir, tmp_path):
    proc = run_baseline(mlp_dir, tmp_path / "b.json", tmp_path / "c", modes="eager,turbo")
    assert proc.returncode != 0 and "unknown modes" in proc.stderr


@apply_marks(gpu)
def test_all_modes_on_gpu(mlp_dir, tmp_path):
    proc = run_baseline(mlp_dir, tmp_path / "b.json", tmp_path / "cache", device="cuda",
                        modes="eager,compile,reduce-overhead", info_modes="eager")
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "b.json").read_text())
    assert set(result["modes"]) == {"eager", "compile", "reduce-overhead"}
    for mode, entry in result["modes"].items():
        assert "error" not in entry, entry
        assert entry["timing"]["stats"]["median_ms"] > 0
        if mode != "eager":
            assert entry["compile_s"] > 0
    assert "H200" in result["gpu"] or result["gpu"]


@pytest.fixture(scope="module")
def softmax_dir(tmp_path_factory):
    return capture_task("softmax.py", str(tmp_path_factory.mktemp("captures")))


def run_batch(graph_dirs, out_dir, cache_dir, modes="eager", info_modes="", extra=()):
    command = [sys.executable, "-m", "stitch_harness.judge", "baseline-batch", "--out-dir",
               str(out_dir), "--modes", modes, "--info-modes", info_modes, "--iters", "4",
               "--warmup", "1", "--timing-sets", "2", "--device", "cpu", "--cache-dir",
               str(cache_dir), *extra]
    for graph_dir in graph_dirs:
        command += ["--graph-dir", str(graph_dir)]
    return subprocess.run(command, capture_output=True, text=True, env=subprocess_env(),
                          timeout=1200)


def test_batch_times_each_mode_once_for_all_tasks_and_shares_the_cache(mlp_dir, softmax_dir,
                                                                       tmp_path):
    cache = tmp_path / "cache"
    proc = run_batch([mlp_dir, softmax_dir], tmp_path / "out", cache, info_modes="eager")
    assert proc.returncode == 0, proc.stderr
    # One process per (mode, flags) for both tasks, not one per task.
    assert proc.stderr.count("timing eager (track flags) for 2 tasks in one fresh process") == 1
    assert proc.stderr.count("timing eager (pytorch-default flags) for 2 tasks") == 1
    results = {}
    for name in ("mlp", "softmax"):
        result = json.loads((tmp_path / "out" / f"{name}.json").read_text())
        assert result["task"] == name and result["from_cache"] is False
        stats = result["modes"]["eager"]["timing"]["stats"]
        assert stats["iterations"] == 4 and stats["median_ms"] > 0
        assert result["pytorch_default_flags"]["eager"]["precision"]["cudnn_allow_tf32"] is True
        results[name] = result
    assert len(os.listdir(cache)) == 2

    # The single-task command finds what the batch stored, under the same key.
    single = run_baseline(mlp_dir, tmp_path / "b.json", cache, info_modes="eager")
    assert single.returncode == 0, single.stderr
    reread = json.loads((tmp_path / "b.json").read_text())
    assert reread["from_cache"] is True and reread["modes"] == results["mlp"]["modes"]

    again = run_batch([mlp_dir, softmax_dir], tmp_path / "out2", cache, info_modes="eager")
    assert again.returncode == 0, again.stderr
    assert "2 tasks, 2 fully cached" in again.stderr and "fresh process" not in again.stderr


def test_batch_records_a_failing_task_and_times_the_others(mlp_dir, softmax_dir, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    graph = json.loads((Path(mlp_dir) / "graph.json").read_text())
    graph["task"]["name"] = "broken"
    (broken / "graph.json").write_text(json.dumps(graph))  # no weights, no task file: fails
    proc = run_batch([broken, softmax_dir], tmp_path / "out", tmp_path / "cache")
    assert proc.returncode == 1
    assert "broken eager failed" in proc.stderr
    failed = json.loads((tmp_path / "out" / "broken.json").read_text())
    assert "error" in failed["modes"]["eager"]
    good = json.loads((tmp_path / "out" / "softmax.json").read_text())
    assert good["modes"]["eager"]["timing"]["stats"]["median_ms"] > 0
    assert os.listdir(tmp_path / "cache") == [p for p in os.listdir(tmp_path / "cache")
                                              if p.startswith("softmax-")]


def test_warm_only_compiles_and_times_nothing(softmax_dir, tmp_path):
    jobs = tmp_path / "jobs.json"
    jobs.write_text(json.dumps([{"index": 0, "graph_dir": str(softmax_dir)}]))
    proc = subprocess.run([sys.executable, "-m", "stitch_harness.judge", "baseline-batch-mode",
                           "--jobs-file", str(jobs), "--out-dir", str(tmp_path), "--mode",
                           "compile", "--warm-only", "--device", "cpu"],
                          capture_output=True, text=True, env=subprocess_env(), timeout=1200)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "0.json").read_text())
    assert set(result) == {"warmed_s"} and result["warmed_s"]["compile"] > 0


def test_cache_only_reports_what_is_missing_and_times_nothing(mlp_dir, tmp_path):
    cache = tmp_path / "cache"
    empty = run_baseline(mlp_dir, tmp_path / "b0.json", cache, extra=["--cache-only"])
    assert empty.returncode == 0, empty.stderr
    looked = json.loads((tmp_path / "b0.json").read_text())
    assert looked["missing"] == ["eager"] and looked["modes"] == {} and not looked["from_cache"]
    assert "fresh process" not in empty.stderr and not cache.exists()

    assert run_baseline(mlp_dir, tmp_path / "b1.json", cache).returncode == 0
    full = run_baseline(mlp_dir, tmp_path / "b2.json", cache, extra=["--cache-only"])
    found = json.loads((tmp_path / "b2.json").read_text())
    assert found["missing"] == [] and found["from_cache"] is True
    assert found["modes"]["eager"]["timing"]["stats"]["median_ms"] > 0
    assert "cache: complete" in full.stderr
