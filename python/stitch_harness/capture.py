"""Capture one KernelBench task into a directory: graph.json, weights, reference, capture.json.

Stages (each timed, each with its failure category, see errors.py): load the file, build the model,
make fake inputs, torch.export, decompose, convert to graph.json, write the weights, run the
reference. Files appear atomically; graph.json is written last of the artefacts and capture.json
after it, so a directory whose capture.json says "captured" is complete, and a failed capture leaves
no graph, weights or reference behind.
"""
import contextlib
import os
import resource
import signal
import time
import traceback

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from . import files
from .errors import CaptureError, Category, describe_exception
from .export_graph import (cumulative_momentum_as_constant, decompose, export_model,
                           register_tensor_attributes_as_buffers)
from .graph_build import build_graph, remove_dead_nodes, validate_graph, value_type
from .random_ops import replace_random_ops
from .reference import compute_reference
from .task_inputs import fake_inputs
from .task_loader import build_model, load_task

ARTEFACTS = ("graph.json", "weights.safetensors", "reference/inputs.safetensors",
             "reference/outputs.safetensors", "reference/reference.json")


class Options:
    def __init__(self, seed=42, inference=False, reference_limit_mb=256.0, reference=True, device="auto",
                 reference_seconds=20.0):
        self.seed = seed
        self.inference = inference
        self.reference_limit_mb = reference_limit_mb
        self.reference = reference
        self.device = device
        self.reference_seconds = reference_seconds  # CPU reference budget; 0 or None: no limit


def _bytes(tensor_type):
    size = {"float64": 8, "int64": 8, "float32": 4, "int32": 4, "float16": 2, "bfloat16": 2,
            "int16": 2}.get(tensor_type["dtype"], 1)
    count = 1
    for extent in tensor_type["shape"]:
        count *= extent
    return count * size


class _BudgetExceeded(BaseException):
    """The reference run took longer than its budget. A BaseException, like KeyboardInterrupt, so
    the `except Exception` handlers that classify reference failures let it through."""


@contextlib.contextmanager
def _time_budget(seconds):
    """Raises _BudgetExceeded in this (main) thread after `seconds`; no limit when falsy. Python
    checks signals between operations, so a long model stops after its current op."""
    if not seconds:
        yield
        return

    def on_alarm(signum, frame):
        raise _BudgetExceeded()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _peak_rss_mb():
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


class _Stopwatch:
    def __init__(self):
        self.seconds = {}
        self.start = self.last = time.monotonic()

    def lap(self, stage):
        now = time.monotonic()
        self.seconds[stage] = round(now - self.last, 3)
        self.last = now

    def total(self):
        return {**self.seconds, "total": round(time.monotonic() - self.start, 3)}


def _capture(path, out_dir, options, clock):
    task = load_task(path)
    clock.lap("load")
    model, _ = build_model(task, options.seed, options.inference)
    registered = register_tensor_attributes_as_buffers(model)
    clock.lap("construct")
    fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
    inputs, distributions = fake_inputs(task, options.seed, fake_mode)
    clock.lap("inputs")
    with cumulative_momentum_as_constant(model) as cumulative:
        exported = export_model(model, inputs)
    clock.lap("export")
    exported = decompose(exported)
    clock.lap("decompose")

    try:
        traced, tensors, info = build_graph(exported, task, model.training)
        for graph_input, position in zip(traced["inputs"], info["input_positions"]):
            graph_input["distribution"] = distributions[position]
        graph, sources, random_notes = replace_random_ops(traced)
        graph = remove_dead_nodes(graph)
    except CaptureError:
        raise
    except Exception as exc:
        raise CaptureError(Category.decompose_failed,
                           f"converting the graph failed: {describe_exception(exc)}") from exc
    problems = validate_graph(graph)
    if problems:
        raise CaptureError(Category.internal, f"invalid graph: {problems[0]} ({len(problems)} problems)")
    clock.lap("convert")

    files.write_safetensors(os.path.join(out_dir, "weights.safetensors"), tensors)
    clock.lap("weights")

    io_bytes = sum(_bytes(item) for item in graph["inputs"]) + sum(
        _bytes(value_type(graph, ref)) for ref in graph["outputs"])
    io_mb = io_bytes / 2**20
    conditioning = None
    if not options.reference:
        reference = "skipped: --no-reference"
    elif io_mb > options.reference_limit_mb:
        reference = f"skipped: inputs and outputs take {io_mb:.0f} MiB > {options.reference_limit_mb:g} MiB"
    else:
        # "auto" is resolved here, in the capturing process: capture-batch must not touch CUDA
        # before it forks.
        device = options.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        budget = options.reference_seconds if device == "cpu" else None
        try:
            with _time_budget(budget):
                ref_inputs, ref_outputs, record = compute_reference(
                    task, model, graph, traced, sources, tensors, info["input_positions"], options.seed,
                    device)
        except _BudgetExceeded:
            reference = (f"skipped: the CPU reference ran past --reference-seconds {budget:g}; "
                         "the judge computes references on the GPU")
        else:
            reference_dir = os.path.join(out_dir, "reference")
            files.write_safetensors(os.path.join(reference_dir, "inputs.safetensors"),
                                    {f"input{i}": tensor for i, tensor in enumerate(ref_inputs)})
            files.write_safetensors(os.path.join(reference_dir, "outputs.safetensors"),
                                    {f"output{i}": tensor for i, tensor in enumerate(ref_outputs)})
            files.write_json(os.path.join(reference_dir, "reference.json"), record)
            reference = "written"
            conditioning = record.get("conditioning")
    clock.lap("reference")

    files.write_json(os.path.join(out_dir, "graph.json"), graph)
    ops = {}
    for node in graph["nodes"]:
        ops[node["op"]] = ops.get(node["op"], 0) + 1
    return {
        "nodes": len(graph["nodes"]),
        "inputs": len(graph["inputs"]),
        "random_inputs": sum(1 for item in graph["inputs"] if item["kind"] == "random"),
        "params": len(graph["params"]),
        "training": graph["training"],
        "reference": reference,
        "io_mib": round(io_mb, 3),
        "ops": dict(sorted(ops.items())),
        "registered_buffers": registered,
        "specialized_inputs": info["specialized_inputs"],
        "notes": info["notes"] + random_notes + [
            f"BatchNorm {path}: momentum=None exported as the constant factor of its first call"
            for path in cumulative],
        # An ill-conditioned model whose graph was checked in FP64 (reference.py), as reference.json
        # records it.
        **({"conditioning": conditioning} if conditioning else {}),
    }


def run_capture(path, out_dir, options):
    """Capture `path` into `out_dir`; always writes out_dir/capture.json. Returns its content."""
    os.makedirs(out_dir, exist_ok=True)
    for name in ARTEFACTS + ("capture.json",):
        files.remove_if_present(os.path.join(out_dir, name))
    clock = _Stopwatch()
    common = {"task": os.path.splitext(os.path.basename(path))[0], "file": os.path.abspath(path),
              "torch_version": torch.__version__}
    try:
        result = {"status": "captured", **common, **_capture(path, out_dir, options, clock)}
    except BaseException as exc:
        details = ""
        if isinstance(exc, CaptureError):
            category, message, details = exc.category, exc.message, exc.details
        elif isinstance(exc, KeyboardInterrupt):
            raise
        else:
            category, message = Category.internal, f"harness error: {describe_exception(exc)}"
        for name in ARTEFACTS:
            files.remove_if_present(os.path.join(out_dir, name))
        result = {"status": "failed", **common, "category": category.value, "message": message,
                  "traceback": traceback.format_exc()}
        if details:
            result["details"] = details
    result["seconds"] = clock.total()
    result["peak_rss_mb"] = _peak_rss_mb()
    files.write_json(os.path.join(out_dir, "capture.json"), result)
    return result
