"""Load a KernelBench-format task file the way KernelBench does, and build its model.

A task file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`. The file is
executed as a module; the model is built with the seed set before get_init_inputs() and again before
Model(*init_inputs), in fp32, left in training mode unless inference is asked for (KernelBench never
calls .eval(), so BatchNorm uses batch statistics and Dropout is live).
"""
import hashlib
import importlib.util
import itertools
import os
import sys

from .errors import CaptureError, Category, describe_exception

_module_counter = itertools.count()


class Task:
    """A loaded task file: its module, the three entry points and its module-level constants."""

    def __init__(self, path, module):
        self.path = os.path.abspath(path)
        self.file = os.path.basename(path)
        self.name = os.path.splitext(self.file)[0]
        self.module = module
        self.model_class = getattr(module, "Model", None)
        self.get_inputs = getattr(module, "get_inputs", None)
        self.get_init_inputs = getattr(module, "get_init_inputs", None)
        with open(path, "rb") as handle:
            self.sha256 = hashlib.sha256(handle.read()).hexdigest()
        self.constants = module_constants(module)


def _is_constant(value, depth=0):
    if isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)) and depth < 3:
        return all(_is_constant(item, depth + 1) for item in value)
    return False


def module_constants(module):
    """Module-level ints, floats, bools, strings and (nested) lists/tuples of them, by name."""
    constants = {}
    for name, value in vars(module).items():
        if name.startswith("_") or not _is_constant(value):
            continue
        constants[name] = list(value) if isinstance(value, tuple) else value
    return constants


def load_task(path):
    """Execute the file as a fresh module. Raises CaptureError(load_failed / not_a_task)."""
    if not os.path.isfile(path):
        raise CaptureError(Category.load_failed, "no such file")
    module_name = f"stitch_task_{next(_module_counter)}_{os.path.splitext(os.path.basename(path))[0]}"
    module_name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in module_name)
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    # Registered so that classes defined in the file can be found by name (pickling, dataclasses).
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise CaptureError(Category.load_failed,
                           f"syntax error at line {exc.lineno}: {exc.msg}") from exc
    except BaseException as exc:  # an import error, or any exception from module-level code
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise CaptureError(Category.load_failed, f"loading the file failed: {describe_exception(exc)}") from exc
    task = Task(path, module)
    check_task(task)
    return task


def check_task(task):
    import torch.nn as nn

    missing = []
    if not (isinstance(task.model_class, type) and issubclass(task.model_class, nn.Module)):
        missing.append("class Model(nn.Module)" if task.model_class is None
                       else "class Model(nn.Module) (Model is not an nn.Module subclass)")
    for name in ("get_inputs", "get_init_inputs"):
        if not callable(getattr(task, name)):
            missing.append(f"{name}()")
    if missing:
        raise CaptureError(Category.not_a_task, "not a KernelBench task: missing " + ", ".join(missing))


def build_model(task, seed, inference):
    """Seed, get_init_inputs(), seed, Model(*init_inputs). Raises CaptureError(construct_failed)."""
    import torch

    try:
        torch.manual_seed(seed)
        init_inputs = task.get_init_inputs()
    except Exception as exc:
        raise CaptureError(Category.construct_failed,
                           f"get_init_inputs() failed: {describe_exception(exc)}") from exc
    try:
        torch.manual_seed(seed)
        model = task.model_class(*init_inputs)
    except Exception as exc:
        raise CaptureError(Category.construct_failed,
                           f"Model(*get_init_inputs()) failed: {describe_exception(exc)}") from exc
    if inference:
        model.eval()
    return model, list(init_inputs)
