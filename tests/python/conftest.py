"""Shared fixtures for the harness tests: one capture-batch run over tests/tasks/ (torch imported
once for all of them) and helpers to run the CLI and read what it wrote."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TASKS = REPO / "tests" / "tasks"
BAD_TASKS = TASKS / "bad"
LARGE_TASKS = TASKS / "large"
# In-process tests import the harness (ctest also sets PYTHONPATH; plain `pytest` needs this).
sys.path.insert(0, str(REPO / "python"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skips with a reason without one)")


def harness_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "python") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def run_harness(*args, timeout=240):
    """Run `python -m stitch_harness ARGS`; returns the CompletedProcess (text output)."""
    return subprocess.run([sys.executable, "-m", "stitch_harness", *map(str, args)], env=harness_env(),
                          capture_output=True, text=True, timeout=timeout, cwd=REPO)


def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class BatchCapture:
    """The result of capture-batch over every task of tests/tasks/ and tests/tasks/bad/."""

    def __init__(self, out_dir, process):
        self.out_dir = Path(out_dir)
        self.process = process
        self.lines = {}
        for line in process.stdout.splitlines():
            record = json.loads(line)
            self.lines[record["task"]] = record

    def dir(self, task):
        return self.out_dir / task

    def graph(self, task):
        assert self.lines[task]["status"] == "captured", self.lines[task]
        return read_json(self.dir(task) / "graph.json")

    def capture_json(self, task):
        return read_json(self.dir(task) / "capture.json")


# Planner fixtures whose model is random in training mode (dropout between RNN layers): their
# graph is captured without a reference (tests/plan/regen_fixtures.sh); a capture with one refuses
# them, as it must, since no run reproduces the reference.
RANDOM_TASKS = {"plan_rnn_dropout_refused"}
GOOD_TASKS = sorted(path for path in TASKS.glob("*.py") if path.stem not in RANDOM_TASKS)


@pytest.fixture(scope="session")
def batch(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("batch")
    random = [TASKS / f"{task}.py" for task in sorted(RANDOM_TASKS)]
    tasks = GOOD_TASKS + sorted(BAD_TASKS.glob("*.py")) + random
    process = run_harness("capture-batch", "--out", out_dir, "--jobs", "2", "--timeout", "120", *tasks,
                          timeout=600)
    return BatchCapture(out_dir, process)


def assert_no_capture_left(folder):
    """A failed capture leaves no graph, weights or reference behind (capture.py)."""
    for name in ("graph.json", "weights.safetensors", "reference/inputs.safetensors",
                 "reference/outputs.safetensors", "reference/reference.json"):
        assert not (folder / name).exists(), name
    assert not [path for path in folder.rglob("*.tmp")]


def ops_of(graph):
    counts = {}
    for node in graph["nodes"]:
        counts[node["op"]] = counts.get(node["op"], 0) + 1
    return counts
