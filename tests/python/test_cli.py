"""The command line: the subcommand table, --help, usage errors."""
from conftest import run_harness


def test_help_lists_subcommands():
    process = run_harness("--help")
    assert process.returncode == 0
    assert "capture" in process.stdout and "capture-batch" in process.stdout


def test_capture_help_explains_outputs_and_exit_codes():
    process = run_harness("capture", "--help")
    assert process.returncode == 0
    for word in ("graph.json", "--inference", "--reference-limit-mb", "--no-reference", "Exit code"):
        assert word in process.stdout


def test_no_subcommand_is_a_usage_error():
    assert run_harness().returncode == 2


def test_capture_without_out_is_a_usage_error():
    process = run_harness("capture", "x.py")
    assert process.returncode == 2 and "--out" in process.stderr


def test_inference_switches_batch_norm_to_running_statistics(tmp_path):
    from conftest import TASKS, read_json

    out = tmp_path / "conv_bn_relu"
    process = run_harness("capture", TASKS / "conv_bn_relu.py", "--out", out, "--inference", "--no-reference")
    assert process.returncode == 0, process.stderr
    graph = read_json(out / "graph.json")
    assert graph["training"] is False
    ops = [node["op"] for node in graph["nodes"]]
    assert "aten._native_batch_norm_legit_no_training.default" in ops
    assert "aten._native_batch_norm_legit_functional.default" not in ops
    assert read_json(out / "capture.json")["reference"] == "skipped: --no-reference"
    assert not (out / "reference").exists()
