"""A CPU reference that runs past --reference-seconds is skipped with the reason recorded, and the
capture itself still succeeds (graph and weights written, no reference/ files)."""
import os

from conftest import TASKS, read_json, run_harness


def test_reference_past_budget_is_skipped_not_failed(tmp_path):
    out = tmp_path / "mlp"
    result = run_harness("capture", TASKS / "mlp.py", "--out", out, "--device", "cpu",
                         "--reference-seconds", "0.000001")
    assert result.returncode == 0, result.stderr
    record = read_json(out / "capture.json")
    assert record["status"] == "captured"
    assert record["reference"].startswith("skipped: the CPU reference ran past"), record["reference"]
    assert os.path.exists(out / "graph.json")
    assert not os.path.exists(out / "reference" / "outputs.safetensors")


def test_reference_within_budget_is_written(tmp_path):
    out = tmp_path / "mlp"
    result = run_harness("capture", TASKS / "mlp.py", "--out", out, "--device", "cpu",
                         "--reference-seconds", "120")
    assert result.returncode == 0, result.stderr
    assert read_json(out / "capture.json")["reference"] == "written"
    assert os.path.exists(out / "reference" / "outputs.safetensors")
