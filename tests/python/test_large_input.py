"""A task whose get_inputs() makes a 6 GiB tensor captures in seconds without allocating it."""
from conftest import LARGE_TASKS, read_json, run_harness


def test_six_gib_input_is_never_allocated(tmp_path):
    out = tmp_path / "relu_6gb"
    process = run_harness("capture", LARGE_TASKS / "relu_6gb.py", "--out", out, timeout=120)
    assert process.returncode == 0, process.stderr
    record = read_json(out / "capture.json")
    assert record["status"] == "captured"
    # The input alone is 6144 MiB; importing torch and exporting take 0.6-1.7 GiB depending on the
    # machine (CI measured 1619 MiB), so half the input is the bound that still proves it was never
    # materialised.
    assert record["peak_rss_mb"] < 3072, record["peak_rss_mb"]
    assert record["seconds"]["total"] < 30
    assert record["reference"].startswith("skipped: inputs and outputs take 12288 MiB")
    assert not (out / "reference").exists()
    graph = read_json(out / "graph.json")
    assert graph["inputs"][0]["shape"] == [4096, 393216]
    assert graph["inputs"][0]["distribution"] == "rand"
    assert [node["op"] for node in graph["nodes"]] == ["aten.relu.default"]
