"""eval-kb: honest ModelNew files pass, adversarial ones are rejected with the right outcome and a
reason that names what they did (tests/kb_solutions/ holds the files, each says what it tries)."""

import json
import os
import subprocess
import sys

import pytest
import torch

from test_judge_support import KB_DIR, apply_marks, gpu, subprocess_env  # noqa: F401

from stitch_harness.eval_kb import evaluate

RELU = os.path.join(KB_DIR, "relu_task.py")
MATMUL = os.path.join(KB_DIR, "matmul_task.py")


def run_cpu(task, solution, **kwargs):
    options = dict(track_name="fp32", trials=2, iters=4, warmup=1, timing_sets=2, spot=2,
                   device_name="cpu", timeout_s=300)
    options.update(kwargs)
    return evaluate(task, os.path.join(KB_DIR, solution), **options)


def test_honest_solution_without_torch_compute_passes():
    result = run_cpu(RELU, "relu_python_lists.py")
    assert result["outcome"] == "passed", result["reason"]
    assert all(s["passed"] for s in result["check_sets"]) and len(result["check_sets"]) == 2
    assert len(result["spot_checks"]) == 2 and all(s["passed"] for s in result["spot_checks"])
    assert result["deterministic"] is True
    assert result["median_ms"] > 0 and result["speedup_vs_eager"] > 0
    assert result["eager"]["stats"]["iterations"] == 4
    assert result["timing_guarded"] is True


def test_unguarded_timing_is_recorded():
    result = run_cpu(RELU, "relu_python_lists.py", timing_guard=False)
    assert result["outcome"] == "passed", result["reason"]
    assert result["timing_guarded"] is False
    assert all(s["passed"] for s in result["spot_checks"])


@pytest.mark.parametrize("task, solution, outcome, words", [
    (MATMUL, "matmul_torch.py", "hacked", ["torch.matmul"]),
    (MATMUL, "matmul_torch_fallback.py", "hacked", ["Tensor.matmul", "even if the refusal"]),
    (RELU, "relu_functional.py", "hacked", ["torch.nn.functional.relu"]),
    (RELU, "relu_subclass.py", "hacked", ["derives from Model"]),
    (RELU, "relu_timer_patch.py", "hacked", ["time.perf_counter", "torch.cuda.Event.elapsed_time"]),
    (RELU, "relu_cached.py", "hacked", ["repeats check set 0"]),
    (RELU, "relu_syntax_error.py", "compile_error", ["SyntaxError"]),
])
def test_adversarial_solution_is_rejected(task, solution, outcome, words):
    result = run_cpu(task, solution)
    assert result["outcome"] == outcome, result["reason"]
    for word in words:
        assert word in result["reason"]


def test_cpp_extension_solution_passes_and_its_aten_twin_is_rejected():
    # One load_inline build (~1 min on a small CPU, cached by torch afterwards) serves both files.
    honest = run_cpu(RELU, "relu_cpp_inline.py", timeout_s=900)
    assert honest["outcome"] == "passed", (honest["reason"], honest.get("log_tail"))
    calls_aten = run_cpu(RELU, "relu_cpp_calls_aten.py", timeout_s=900)
    assert calls_aten["outcome"] == "hacked" and "aten.relu" in calls_aten["reason"]


def test_pointer_keyed_cache_fails_on_timed_iterations():
    result = run_cpu(RELU, "relu_pointer_cache.py")
    assert result["outcome"] in ("wrong", "hacked")
    assert "timed iteration" in result["reason"] or "repeats" in result["reason"]


def test_judge_holds_only_the_references_while_the_candidate_runs(monkeypatch):
    """The check inputs and the eager timing sets are dropped (and the allocator's cache handed
    back) before the candidate's process starts: on large tasks it needs that memory."""
    import gc
    import weakref

    from stitch_harness import eval_kb

    written, events = [], []
    write = eval_kb._write_check_inputs

    def recording_write(exchange, check_inputs):
        written.extend(weakref.ref(t) for inputs in check_inputs for t in inputs)
        return write(exchange, check_inputs)

    def recording_release(device):
        events.append("release")

    run = eval_kb._run_candidate

    def checking_run(spec_path, exchange, timeout_s):
        gc.collect()
        events.append(("candidate", sum(ref() is not None for ref in written)))
        return run(spec_path, exchange, timeout_s)

    monkeypatch.setattr(eval_kb, "_write_check_inputs", recording_write)
    monkeypatch.setattr(eval_kb, "_release_cached_memory", recording_release)
    monkeypatch.setattr(eval_kb, "_run_candidate", checking_run)
    result = run_cpu(RELU, "relu_python_lists.py")
    assert result["outcome"] == "passed", result["reason"]
    assert len(written) == 2  # one input per check set
    # Released after the eager timing and again after the inputs were written; none alive after.
    assert events == ["release", "release", ("candidate", 0)]


def test_solution_without_model_new_is_a_compile_error(tmp_path):
    solution = tmp_path / "empty.py"
    solution.write_text("import torch\n")
    result = evaluate(RELU, str(solution), trials=1, iters=0, device_name="cpu", timeout_s=120)
    assert result["outcome"] == "compile_error" and "no ModelNew" in result["reason"]


def test_forward_that_raises_is_a_runtime_error(tmp_path):
    solution = tmp_path / "raises.py"
    solution.write_text("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
                        "    def forward(self, x):\n        raise ValueError('boom')\n")
    result = evaluate(RELU, str(solution), trials=1, iters=0, device_name="cpu", timeout_s=120)
    assert result["outcome"] == "runtime_error" and "boom" in result["reason"]


def test_hanging_solution_times_out(tmp_path):
    solution = tmp_path / "hangs.py"
    solution.write_text("import time\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
                        "    def forward(self, x):\n        time.sleep(3600)\n")
    result = evaluate(RELU, str(solution), trials=1, iters=0, device_name="cpu", timeout_s=20)
    assert result["outcome"] == "timeout"


def test_command_line_writes_the_result(tmp_path):
    out = tmp_path / "result.json"
    proc = subprocess.run([sys.executable, "-m", "stitch_harness.eval_kb", MATMUL,
                           os.path.join(KB_DIR, "matmul_torch.py"), "--out", str(out), "--device",
                           "cpu", "--trials", "1", "--iters", "0"], capture_output=True, text=True,
                          env=subprocess_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(out.read_text())
    assert result["outcome"] == "hacked" and result["track"] == "fp32"
    assert proc.stdout.startswith("hacked")


@apply_marks(gpu)
def test_load_inline_cuda_solution_passes_on_gpu():
    result = evaluate(RELU, os.path.join(KB_DIR, "relu_cuda_inline.py"), trials=3, iters=30,
                      device_name="cuda", timeout_s=900)
    assert result["outcome"] == "passed", (result["reason"], result.get("log_tail"))
    assert result["speedup_vs_eager"] > 0.1
    assert result["timing"]["stats"]["iterations"] == 30


@apply_marks(gpu)
def test_torch_matmul_is_rejected_on_gpu():
    result = evaluate(MATMUL, os.path.join(KB_DIR, "matmul_torch.py"), trials=2, iters=10,
                      device_name="cuda", timeout_s=600)
    assert result["outcome"] == "hacked" and "torch.matmul" in result["reason"]


@apply_marks(gpu)
def test_cached_solution_is_rejected_on_gpu():
    result = evaluate(RELU, os.path.join(KB_DIR, "relu_cached.py"), trials=2, iters=10,
                      device_name="cuda", timeout_s=600)
    assert result["outcome"] in ("hacked", "wrong")
