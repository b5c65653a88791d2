"""Shared helpers for the judge, compare, timing and eval-kb tests (no tests of its own).

Imported by those test files: puts python/ on sys.path, defines the `gpu` marker with a visible
skip where there is no CUDA device, and captures a task into a temporary directory once per session.
"""

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.join(REPO, "python")
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

import torch  # noqa: E402

TASKS_DIR = os.path.join(REPO, "tests", "tasks")
KB_DIR = os.path.join(REPO, "tests", "kb_solutions")
HAS_CUDA = torch.cuda.is_available()

# GPU tests carry the `gpu` marker (ctest selects them with -m gpu) and skip visibly without CUDA.
gpu = [pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")]


def apply_marks(marks):
    def decorate(function):
        for mark in marks:
            function = mark(function)
        return function
    return decorate


def subprocess_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + os.pathsep + env.get("PYTHONPATH", "")
    return env


_captured: dict = {}


def capture_task(task_file: str, out_root: str) -> str:
    """Captures tests/tasks/<task_file> (or a path) into out_root once; returns the directory."""
    path = task_file if os.path.isabs(task_file) else os.path.join(TASKS_DIR, task_file)
    if path in _captured:
        return _captured[path]
    out_dir = os.path.join(out_root, os.path.splitext(os.path.basename(path))[0])
    proc = subprocess.run([sys.executable, "-m", "stitch_harness", "capture", path, "--out",
                           out_dir], env=subprocess_env(), capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    _captured[path] = out_dir
    return out_dir
