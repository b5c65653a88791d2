"""judge baseline: fresh processes per mode, the cache, the result file."""

import json
import os
import subprocess
import sys

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
