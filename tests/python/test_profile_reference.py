"""profile_reference: the trace arithmetic on synthetic events, the CLI on the CPU (torch.profiler's
CPU activities stand in for kernels; the profile.json schema is checked), bad input, and — on a GPU
only, skipped visibly elsewhere — CUDA kernels of the reference."""
import json
import subprocess
import sys

import pytest

from conftest import BAD_TASKS, REPO, TASKS, harness_env
from stitch_harness.profile_reference import classify_type, summarize

BOTTLENECKS = {"memory", "compute", "latency", "launch_host", "balanced", "unknown"}


def event(name, start, end, kind="kernel"):
    return {"type": kind, "name": name, "start_ns": start, "end_ns": end, "stream_id": 7}


def test_summarize_busy_time_gaps_and_kernels():
    # Forward [1000, 2000]; a [1100, 1300] and b [1250, 1400] overlap, a again [1600, 1700],
    # a copy [1800, 1850]; one event before the forward is left out.
    events = [event("a", 1100, 1300), event("b", 1250, 1400), event("a", 1600, 1700),
              event("Memcpy DtoD", 1800, 1850, "memcpy"), event("early", 900, 950)]
    doc = summarize(events, 1000, 2000)
    assert doc["forward_ms"] == pytest.approx(1000 / 1e6)
    assert doc["gpu_busy_ms"] == pytest.approx((300 + 100 + 50) / 1e6)
    assert doc["gpu_busy_share"] == pytest.approx(0.45)
    assert doc["gaps"] == {"count": 2, "largest_ms": pytest.approx(200 / 1e6),
                           "leading_ms": pytest.approx(100 / 1e6),
                           "trailing_ms": pytest.approx(150 / 1e6)}
    assert doc["copy_ms"] == pytest.approx(50 / 1e6)
    names = [k["name"] for k in doc["kernels"]]
    assert names == ["a", "b"]  # by total time: a 300 ns, b 150 ns
    a = doc["kernels"][0]
    assert a["launches"] == 2
    assert a["duration_ms"] == pytest.approx(300 / 1e6)
    assert a["mean_gap_before_ms"] == pytest.approx((100 + 200) / 2 / 1e6)
    assert [t["name"] for t in doc["timeline"]] == ["a", "b", "a", "Memcpy DtoD"]


def test_summarize_launch_bound_forward():
    # 10 us kernels with 40 us of idle GPU before each: busy 20%.
    events = [event("k", 40_000 + i * 50_000, 50_000 + i * 50_000) for i in range(4)]
    doc = summarize(events, 0, 200_000)
    assert doc["forward_bottleneck"] == "launch_host"
    assert doc["kernels"][0]["bottleneck"] == "launch_host"
    busy = summarize([event("k", 0, 190_000)], 0, 200_000)
    assert busy["forward_bottleneck"] == "unknown"  # busy GPU, no counters
    assert busy["kernels"][0]["bottleneck"] == "unknown"


def test_classify_type():
    assert classify_type("Memcpy HtoD (Pageable -> Device)") == "memcpy"
    assert classify_type("Memset (Device)") == "memset"
    assert classify_type("void at::native::vectorized_elementwise_kernel<4>(...)") == "kernel"


def run_profile(task, out, *extra):
    return subprocess.run([sys.executable, "-m", "stitch_harness.profile_reference", "--task",
                           str(task), "--out", str(out), "--warmup", "1", *extra],
                          env=harness_env(), capture_output=True, text=True, timeout=300, cwd=REPO)


def check_schema(doc):
    for key in ("source", "forward_ms", "gpu_busy_ms", "kernels", "notes", "timeline",
                "forward_bottleneck", "gaps"):
        assert key in doc, key
    assert doc["format"] == "stitchcuda.profile" and doc["version"] == 1
    assert doc["source"] == "torch.profiler"
    assert doc["forward_ms"] > 0
    assert isinstance(doc["notes"], list)
    assert doc["kernels"], "no kernels"
    for kernel in doc["kernels"]:
        assert isinstance(kernel["name"], str) and kernel["name"]
        assert kernel["duration_ms"] >= 0
        assert kernel["launches"] >= 1
        assert kernel["bottleneck"] in BOTTLENECKS
        # No counters from torch.profiler: the percentages are absent, not null.
        assert "dram_pct" not in kernel and "sm_pct" not in kernel
    durations = [k["duration_ms"] for k in doc["kernels"]]
    assert durations == sorted(durations, reverse=True)


def test_cpu_profile_writes_the_schema(tmp_path):
    out = tmp_path / "profile.json"
    process = run_profile(TASKS / "scale_shift_relu.py", out, "--device", "cpu")
    assert process.returncode == 0, process.stderr
    doc = json.loads(out.read_text())
    check_schema(doc)
    assert doc["gpu_busy_ms"] is None
    assert doc["device"]["name"] == "cpu"
    names = {k["name"] for k in doc["kernels"]}
    assert {"aten::mul", "aten::add", "aten::relu"} <= names, names
    assert sum(k["duration_ms"] for k in doc["kernels"]) <= doc["forward_ms"] + 1e-9


def test_not_a_task_exits_two(tmp_path):
    out = tmp_path / "profile.json"
    process = run_profile(BAD_TASKS / "not_a_task.py", out, "--device", "cpu")
    assert process.returncode == 2, process.stderr
    assert "error:" in process.stderr
    assert not out.exists()


def test_cuda_requested_without_a_gpu_fails_cleanly(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the no-GPU path cannot be seen here")
    out = tmp_path / "profile.json"
    process = run_profile(TASKS / "scale_shift_relu.py", out, "--device", "cuda")
    assert process.returncode == 1
    assert "no CUDA device" in process.stderr
    assert not out.exists()


def test_gpu_profile_lists_cuda_kernels(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: the GPU profile of the reference is not checked here")
    out = tmp_path / "profile.json"
    process = run_profile(TASKS / "scale_shift_relu.py", out, "--device", "cuda")
    assert process.returncode == 0, process.stderr
    doc = json.loads(out.read_text())
    check_schema(doc)
    assert doc["gpu_busy_ms"] is not None and doc["gpu_busy_ms"] > 0
    assert doc["gpu_busy_ms"] <= doc["forward_ms"] + 1e-9
    assert all(k["duration_ms"] > 0 for k in doc["kernels"])
    assert doc["device"]["name"] != "cpu"
