"""Reference inputs and outputs for a captured task, and the check that the graph matches the model.

Without random ops in forward, the reference outputs come from the original model run eagerly on the
seeded inputs, and the captured graph (graph_eval) must agree with them. With random ops, their values
are recorded from a run of the traced program and fed to the captured graph as inputs; that run's
outputs are the reference, so the outputs are reproducible from reference/inputs.safetensors.
Precision: TF32 off for matmul and cuDNN (DESIGN.md section 6, fp32 track).
"""
import copy
import time

import torch
from torch.utils._pytree import tree_flatten, tree_map

from . import graph_eval
from .errors import CaptureError, Category, describe_exception
from .task_inputs import real_inputs

# The captured graph agrees with eager when every output is allclose at this tolerance or its
# relative error norm is below REL_NORM_LIMIT (decompositions reorder floating-point sums).
ATOL = RTOL = 1e-3
REL_NORM_LIMIT = 1e-5


def precision_flags():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return {"tf32_matmul": False, "tf32_cudnn": False, "float32_matmul_precision": "highest"}


def compare(actual, expected):
    """Per-output agreement: max abs error, relative error norm, and whether it passes."""
    results = []
    for index, (a, b) in enumerate(zip(actual, expected)):
        entry = {"output": index, "shape_ok": list(a.shape) == list(b.shape) and a.dtype == b.dtype}
        if not entry["shape_ok"]:
            entry.update(ok=False, detail=f"{list(a.shape)} {a.dtype} vs {list(b.shape)} {b.dtype}")
        elif a.is_floating_point():
            a64, b64 = a.double(), b.double()
            finite = torch.isfinite(a64) & torch.isfinite(b64)
            # NaN where the other has NaN, the same infinity where the other has one.
            nonfinite_ok = bool((a64.isnan() == b64.isnan()).all()) and bool(
                ((a64 == b64) | finite | (a64.isnan() & b64.isnan())).all())
            zero = torch.zeros((), dtype=torch.float64)
            diff = (a64 - b64).abs().where(finite, zero)
            max_abs = float(diff.max()) if diff.numel() else 0.0
            norm = float(b64.where(finite, zero).norm())
            rel_norm = float(diff.norm()) / norm if norm > 0 else max_abs
            close = bool(torch.allclose(a64, b64, rtol=RTOL, atol=ATOL, equal_nan=True))
            entry.update(max_abs_error=max_abs, rel_error_norm=rel_norm,
                         ok=nonfinite_ok and (close or rel_norm <= REL_NORM_LIMIT))
        else:
            mismatches = int((a != b).sum())
            entry.update(mismatches=mismatches, ok=mismatches == 0)
        results.append(entry)
    return results


def _flatten_outputs(value):
    leaves = tree_flatten(value)[0]
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def compute_reference(task, model, graph, traced_graph, sources, params, input_positions, seed, device):
    """Returns (inputs, outputs, record): inputs in graph.json order (random ones included)."""
    flags = precision_flags()
    try:
        real = real_inputs(task, seed)
        leaves = tree_flatten(real)[0]
    except CaptureError as exc:
        raise CaptureError(Category.reference_failed, exc.message) from exc
    user_inputs = [leaves[position].to(device) for position in input_positions]
    for index, (tensor, spec) in enumerate(zip(user_inputs, graph["inputs"])):
        if list(tensor.shape) != spec["shape"]:
            raise CaptureError(Category.reference_failed,
                               f"get_inputs() gave input {index} shape {list(tensor.shape)} on a second call, "
                               f"{spec['shape']} on the first")
    device_params = {name: tensor.to(device) for name, tensor in params.items()}
    record = {"seed": seed, "device": str(device), "precision": flags,
              "torch_version": torch.__version__}
    try:
        started = time.monotonic()
        if sources:
            # Record the random values from the traced program, then feed them to the captured graph.
            traced_outputs, recorded = graph_eval.evaluate(traced_graph, user_inputs, device_params,
                                                           device, record=sources)
            record["seconds"] = {"traced_graph": round(time.monotonic() - started, 3)}
            inputs = user_inputs + [recorded[source].contiguous() for source in sources]
            outputs, _ = graph_eval.evaluate(graph, inputs, device_params, device)
            record["outputs_from"] = "captured graph with recorded random inputs"
            checks = compare(outputs, traced_outputs)
        else:
            # The graph first: eager forward may update buffers in place (BatchNorm running stats).
            outputs, _ = graph_eval.evaluate(graph, user_inputs, device_params, device)
            record["seconds"] = {"graph": round(time.monotonic() - started, 3)}
            eager_outputs = _run_eager(model, real, device)
            record["outputs_from"] = "eager model"
            checks = compare(outputs, eager_outputs)
            outputs = eager_outputs
        second_run = "graph" if sources else "eager"
        record["seconds"][second_run] = round(time.monotonic() - started - sum(record["seconds"].values()), 3)
    except CaptureError:
        raise
    except Exception as exc:
        raise CaptureError(Category.reference_failed,
                           f"reference run failed: {describe_exception(exc)}") from exc
    record["check"] = checks
    bad = [check for check in checks if not check["ok"]]
    if bad or len(outputs) != len(graph["outputs"]):
        detail = "; ".join(f"output {c['output']}: " + (
            c.get("detail") or f"max abs error {c.get('max_abs_error', c.get('mismatches'))}, "
                               f"rel error norm {c.get('rel_error_norm', '-')}") for c in bad)
        detail = detail or "output count differs"
        if not sources and len(outputs) == len(graph["outputs"]):
            _refuse_if_ill_conditioned(model, real, device, outputs, detail)
        raise CaptureError(Category.reference_failed, f"the captured graph disagrees with the model: {detail}")
    return inputs if sources else user_inputs, outputs, record


def _refuse_if_ill_conditioned(model, real, device, fp32_outputs, detail):
    """Raises ill_conditioned when the model's FP32 result is itself off from its FP64 result by more
    than the graph may be: then the disagreement is the task's, not the capture's, and no FP32
    program could be judged against the reference either."""
    try:
        model64 = copy.deepcopy(model).to(device).double()
        real64 = tree_map(lambda leaf: leaf.double() if isinstance(leaf, torch.Tensor)
                          and leaf.is_floating_point() else leaf, real)
        fp64_outputs = _run_eager(model64, real64, device)
    except Exception:  # a model that does not run in FP64: no verdict, the plain failure stands
        return
    drift = [c.get("rel_error_norm", 0.0) for c in compare([o.double() for o in fp32_outputs],
                                                            fp64_outputs) if "rel_error_norm" in c]
    worst = max(drift, default=0.0)
    if worst > REL_NORM_LIMIT:
        raise CaptureError(Category.ill_conditioned,
                           f"ill-conditioned: the model's own FP32 result differs from its FP64 result "
                           f"by a relative error norm of {worst:.2g} (FP32 rounding alone moves the "
                           f"output past the {REL_NORM_LIMIT:g} the captured graph is held to), and the "
                           f"captured graph disagrees with it: {detail}")


def _run_eager(model, real, device):
    model = model.to(device)
    # Clones: a forward that mutates its inputs must not change the recorded reference inputs.
    args = tree_map(lambda leaf: leaf.to(device).clone() if isinstance(leaf, torch.Tensor) else leaf, real)
    with torch.no_grad():
        return [output.detach() for output in _flatten_outputs(model(*args))]
