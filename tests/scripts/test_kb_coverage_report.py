"""scripts/kb_coverage_report.py over a hand-made kb_coverage.sh run directory: per-level counts,
geomeans and KernelBench's fast_p (over all of a level's tasks, refused ones included)."""
import importlib.util
import json
import os

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "kb_coverage_report.py")


def load_report():
    spec = importlib.util.spec_from_file_location("kb_coverage_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_task(runs, level, task, *, refused=False, outcome="passed", speedups=None,
               capture_failed=False):
    directory = runs / "capture-0" / level / task
    (directory / "generated").mkdir(parents=True)
    if capture_failed:
        (directory / "capture.json").write_text(json.dumps(
            {"status": "failed", "category": "ill_conditioned",
             "message": "ill-conditioned: 0.0028"}))
        return
    (directory / "graph.json").write_text("{}")
    if refused:
        (directory / "plan.rc").write_text("2\n")
        (directory / "plan.txt").write_text("error: no kernel for this op (aten.unfold)\n")
        return
    (directory / "plan.rc").write_text("0\n")
    (directory / "generate.rc").write_text("0\n")
    plan = {"floor_us": 100.0, "subtasks": [{}]}
    (directory / "generated" / "plan.json").write_text(json.dumps(plan))
    speedups = speedups or {}
    report = {"outcome": outcome, "timing": {"speedup_basis": "stream",
                                             "protocol": {"median_ms": 0.5}},
              "baselines": {"modes": {m: {"median_ms": 0.5 * s} for m, s in speedups.items()}},
              "speedups": speedups, "outputs": [{"relative_error_norm": 1e-7}]}
    (directory / "verify.json").write_text(json.dumps(report))


@pytest.fixture
def report():
    return load_report()


def test_fast_p_counts_all_tasks_of_the_level(report):
    rows = [{"status": "passed", "speedup_eager": 2.5}, {"status": "passed", "speedup_eager": 1.2},
            {"status": "passed", "speedup_eager": 0.8}, {"status": "refused"},
            {"status": "runtime_error", "speedup_eager": 9.0}]
    assert report.fast_p(rows, "eager") == [3 / 5, 2 / 5, 1 / 5, 1 / 5]
    assert report.fast_p([], "eager") == [0.0, 0.0, 0.0, 0.0]


def test_fast_p_threshold_is_strict(report):
    rows = [{"status": "passed", "speedup_compile": 2.0},
            {"status": "passed", "speedup_compile": 1.0}]
    assert report.fast_p(rows, "compile") == [1.0, 0.5, 0.5, 0.0]


def test_coverage_md_holds_the_speed_table(report, tmp_path, capsys):
    runs = tmp_path / "runs"
    write_task(runs, "level3", "1_Fast",
               speedups={"eager": 4.0, "compile": 2.0, "reduce-overhead": 1.6})
    write_task(runs, "level3", "2_Slow",
               speedups={"eager": 1.0, "compile": 0.5, "reduce-overhead": 0.4})
    write_task(runs, "level3", "3_Wrong", outcome="incorrect",
               speedups={"eager": 3.0, "compile": 3.0, "reduce-overhead": 3.0})
    write_task(runs, "level3", "4_Refused", refused=True)
    write_task(runs, "level3", "5_Unstable", capture_failed=True)
    out = tmp_path / "out"
    assert report.main([str(runs), "--out", str(out), "--speed-levels", "level3"]) == 0
    text = (out / "coverage.md").read_text()
    # Geomean over the two passing tasks; fast_p over all five tasks.
    assert "| level3 | eager | 2 of 5 | 2.00x | 40% | 20% | 20% | 20% |" in text
    assert "| level3 | compile | 2 of 5 | 1.00x | 40% | 20% | 20% | 0% |" in text
    assert "| level3 | reduce-overhead | 2 of 5 | 0.80x | 40% | 20% | 20% | 0% |" in text
    assert "- level3: aten.unfold: 1 (4_Refused)" in text
    assert "- level3: capture: ill_conditioned: 1 (5_Unstable)" in text
    printed = capsys.readouterr().out
    assert "| level3 | eager | 2 of 5 |" in printed and "## level3" not in printed
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["passed", "passed", "incorrect", "refused",
                                              "capture_failed"]
    assert records[-1]["reason"] == "ill-conditioned: 0.0028"
