"""Capture failure categories and the exception that carries one (issue #2, item 3).

A failed capture is data: capture.json records the category, a one-line message and the traceback,
and the CLI turns the category into an exit code. Everything else in the package raises CaptureError
with the category that names the stage that went wrong.
"""
import enum


class Category(str, enum.Enum):
    not_a_task = "not_a_task"              # no Model / get_inputs / get_init_inputs
    load_failed = "load_failed"            # the file does not import (syntax error, import error, ...)
    construct_failed = "construct_failed"  # get_init_inputs() or Model(*init_inputs) raised
    inputs_failed = "inputs_failed"        # get_inputs() raised
    export_failed = "export_failed"        # torch.export rejected the model (data-dependent flow, ...)
    decompose_failed = "decompose_failed"  # run_decompositions() or the conversion to graph.json failed
    reference_failed = "reference_failed"  # the reference run failed or disagrees with the graph
    ill_conditioned = "ill_conditioned"    # the graph disagrees with the model in FP32, whose own
                                           # FP32 and FP64 results are further apart than
                                           # compare.ILL_CONDITIONED_CAP
    timeout = "timeout"                    # capture-batch killed the child after --timeout seconds
    internal = "internal"                  # a bug in the harness (or a crash of the child)


def exit_code(category):
    """not_a_task is a usage error (2); every other failure is 1."""
    return 2 if Category(category) is Category.not_a_task else 1


def one_line(text, limit=400):
    """Squeeze an exception message onto one line, so the CLI prints exactly one error line."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def describe_exception(exc):
    """'TypeError: message' on one line."""
    message = one_line(exc)
    name = type(exc).__name__
    return f"{name}: {message}" if message else name


class CaptureError(Exception):
    """A capture failure with its category; `message` is one line and names the problem."""

    def __init__(self, category, message, details=""):
        super().__init__(message)
        self.category = Category(category)
        self.message = one_line(message)
        self.details = details  # longer text for capture.json (e.g. export's partial graph)
