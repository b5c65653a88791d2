"""Tasks that must fail: each with its category, exit code and one line on stderr, and nothing left
behind that looks like a capture."""
import textwrap

import pytest

from conftest import BAD_TASKS, TASKS, assert_no_capture_left, read_json, run_harness

BAD = {  # task -> (category, exit code, words the message must contain)
    "not_a_task": ("not_a_task", 2, ["get_inputs()", "get_init_inputs()"]),
    "construct_fails": ("construct_failed", 1, ["Model(*get_init_inputs()) failed", "TypeError",
                                                "cannot build a model with 8 features"]),
    "data_dependent": ("export_failed", 1, ["torch.export failed", "data_dependent.py:12", "x.sum() > 0"]),
    "syntax_error": ("load_failed", 1, ["syntax error at line 4"]),
}


@pytest.mark.parametrize("task", sorted(BAD))
def test_bad_task_fails_with_its_category(tmp_path, task):
    category, code, words = BAD[task]
    out = tmp_path / task
    process = run_harness("capture", BAD_TASKS / f"{task}.py", "--out", out)
    assert process.returncode == code, process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1, process.stderr
    assert lines[0].startswith(f"error: {task}.py: ")
    for word in words:
        assert word in lines[0]
    assert process.stdout == ""
    record = read_json(out / "capture.json")
    assert record["status"] == "failed" and record["category"] == category
    assert "\n" not in record["message"] and record["message"] in lines[0]
    assert "Traceback" in record["traceback"]
    assert_no_capture_left(out)


def test_batch_reports_bad_tasks(batch):
    for task, (category, _, words) in BAD.items():
        line = batch.lines[task]
        assert (line["status"], line["category"]) == ("failed", category)
        assert words[0] in line["message"]
        assert line["nodes"] is None
        assert_no_capture_left(batch.dir(task))
    assert batch.process.returncode == 1  # some tasks failed


def test_failure_removes_an_earlier_capture(tmp_path):
    out = tmp_path / "reused"
    assert run_harness("capture", TASKS / "scale_shift_relu.py", "--out", out).returncode == 0
    assert (out / "graph.json").exists() and (out / "reference" / "outputs.safetensors").exists()
    process = run_harness("capture", BAD_TASKS / "construct_fails.py", "--out", out)
    assert process.returncode == 1
    assert read_json(out / "capture.json")["status"] == "failed"
    assert_no_capture_left(out)


def test_missing_file_is_load_failed(tmp_path):
    process = run_harness("capture", tmp_path / "absent.py", "--out", tmp_path / "absent")
    assert process.returncode == 1
    assert process.stderr.strip() == "error: absent.py: no such file"


def test_get_inputs_failure_is_inputs_failed(tmp_path):
    task = tmp_path / "bad_inputs.py"
    task.write_text(textwrap.dedent("""\
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                return x
        def get_inputs():
            raise ValueError("no inputs today")
        def get_init_inputs():
            return []
        """))
    process = run_harness("capture", task, "--out", tmp_path / "out")
    assert process.returncode == 1
    assert process.stderr.strip() == "error: bad_inputs.py: get_inputs() failed: ValueError: no inputs today"


def test_batch_kills_a_task_past_its_timeout(tmp_path):
    slow = tmp_path / "slow.py"
    slow.write_text(textwrap.dedent("""\
        import time
        import torch
        import torch.nn as nn
        class Model(nn.Module):
            def forward(self, x):
                return x
        def get_inputs():
            return [torch.randn(2)]
        def get_init_inputs():
            time.sleep(60)
            return []
        """))
    process = run_harness("capture-batch", "--out", tmp_path / "out", "--timeout", "3",
                          slow, TASKS / "softmax.py", timeout=120)
    lines = {line["task"]: line for line in map(__import__("json").loads, process.stdout.splitlines())}
    assert lines["slow"]["status"] == "failed" and lines["slow"]["category"] == "timeout"
    assert lines["slow"]["seconds"] < 30
    assert lines["softmax"]["status"] == "captured"
    assert read_json(tmp_path / "out" / "slow" / "capture.json")["category"] == "timeout"
    assert process.returncode == 1
