"""Reference inputs and outputs for a captured task, and the check that the graph matches the model.

Without random ops in forward, the reference outputs come from the original model run eagerly on the
seeded inputs, and the captured graph (graph_eval) must agree with them. With random ops, their values
are recorded from a run of the traced program and fed to the captured graph as inputs; that run's
outputs are the reference, so the outputs are reproducible from reference/inputs.safetensors.
An ill-conditioned model, whose own FP32 result is off its FP64 one, may disagree with its graph
through FP32 rounding alone: then the graph is checked in FP64 instead (_settle_in_fp64), up to
ILL_CONDITIONED_CAP.
Precision: TF32 off for matmul and cuDNN (DESIGN.md section 6, fp32 track).
"""
import copy
import time

import torch
from torch.utils._pytree import tree_flatten, tree_map

from . import graph_eval
from .compare import FP64_ALLOWANCE_MAX, ILL_CONDITIONED_CAP, REFERENCE_NOISE_FACTOR  # noqa: F401
from .errors import CaptureError, Category, describe_exception
from .task_inputs import real_inputs

# The captured graph agrees with eager when every output is allclose at this tolerance or its
# relative error norm is below REL_NORM_LIMIT (decompositions reorder floating-point sums).
ATOL = RTOL = 1e-3
REL_NORM_LIMIT = 1e-5

# A model whose own FP32 result is off its FP64 result by a relative error norm d > REL_NORM_LIMIT is
# ill-conditioned: FP32 rounding alone may separate its graph from it, so capture checks the graph
# in FP64 instead, up to d <= ILL_CONDITIONED_CAP (compare.py says why there).


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
            # The state both run from, kept for an FP64 check (_settle_in_fp64): eager forward
            # updates buffers in place, and on the CPU the graph's params are those same tensors.
            # Kept where the graph runs (the model's buffers are still on the CPU here).
            buffers = {name: buffer.detach().to(device, copy=True) for name, buffer in model.named_buffers()}
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
            record["conditioning"] = _settle_in_fp64(graph, model, buffers, real, user_inputs,
                                                     device_params, device, outputs, detail)
            return user_inputs, outputs, record
        raise CaptureError(Category.reference_failed, f"the captured graph disagrees with the model: {detail}")
    return inputs if sources else user_inputs, outputs, record


def _promote(leaf):
    return leaf.double() if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() else leaf


def _worst_rel_error_norm(checks):
    return max((check["rel_error_norm"] for check in checks if "rel_error_norm" in check), default=0.0)


def _settle_in_fp64(graph, model, buffers, real, user_inputs, params, device, fp32_outputs, detail):
    """The captured graph disagrees with the eager model in FP32 (`detail`). When the model is
    ill-conditioned (its own FP32 result `fp32_outputs` is off its FP64 result by more than
    REL_NORM_LIMIT), FP32 rounding alone can explain that, and the graph is checked in FP64 against
    the model in FP64, both from the captured state (`buffers`, as before the eager run). Returns
    the record's "conditioning" entry when they agree. Raises CaptureError:
    - reference_failed: the model is well conditioned or does not run in FP64 (the FP32
      disagreement stands), or its graph disagrees with it in FP64 too (a capture bug);
    - ill_conditioned: the drift is over ILL_CONDITIONED_CAP, where the judge's FP64 allowance no
      longer tells a correct program from a wrong one."""
    disagrees = f"the captured graph disagrees with the model: {detail}"
    try:
        model64 = copy.deepcopy(model).to(device).double()
        with torch.no_grad():
            for name, buffer in model64.named_buffers():
                if name in buffers:
                    buffer.copy_(buffers[name])
        fp64_outputs = _run_eager(model64, tree_map(_promote, real), device)
    except Exception:  # a model that does not run in FP64: no verdict, the plain failure stands
        raise CaptureError(Category.reference_failed, disagrees) from None
    drift = _worst_rel_error_norm(compare([output.double() for output in fp32_outputs], fp64_outputs))
    if drift <= REL_NORM_LIMIT:
        raise CaptureError(Category.reference_failed, disagrees)
    if drift > ILL_CONDITIONED_CAP:
        raise CaptureError(Category.ill_conditioned,
                           f"ill-conditioned: the model's own FP32 result differs from its FP64 result "
                           f"by a relative error norm of {drift:.2g}, over the {ILL_CONDITIONED_CAP:g} "
                           f"up to which capture checks the graph in FP64 instead (past it, the judge's "
                           f"FP64 allowance of {REFERENCE_NOISE_FACTOR:g}x that error cannot tell a "
                           f"correct program from a wrong one); {disagrees}")
    params64 = {name: _promote(buffers.get(name, tensor)) for name, tensor in params.items()}
    try:
        graph_outputs, _ = graph_eval.evaluate(graph, [_promote(tensor) for tensor in user_inputs],
                                               params64, device, float32_as=torch.float64)
        checks = compare(graph_outputs, fp64_outputs)
    except Exception as exc:
        raise CaptureError(Category.reference_failed,
                           f"{disagrees}; the model is ill-conditioned (its FP32 result is {drift:.2g} "
                           f"off its FP64 one), but the graph does not evaluate in FP64: "
                           f"{describe_exception(exc)}") from exc
    # FP64 rounds 2^29 times finer than FP32: a correct graph lands ~1e-9 * drift from the model,
    # so the FP32 limit is ample; allclose's atol would not be.
    agreement = _worst_rel_error_norm(checks)
    if not all(check["ok"] for check in checks) or agreement > REL_NORM_LIMIT:
        raise CaptureError(Category.reference_failed,
                           f"the captured graph disagrees with the model in FP64 too (relative error "
                           f"norm {agreement:.2g}, over {REL_NORM_LIMIT:g}), more than the model's own "
                           f"FP32 rounding ({drift:.2g} off its FP64 result) explains: {detail}")
    return {"fp32_vs_fp64_rel_error_norm": drift, "cap": ILL_CONDITIONED_CAP,
            "graph_checked_in": "float64", "graph_vs_model_fp64_rel_error_norm": agreement,
            "check_fp64": checks}


def _run_eager(model, real, device):
    model = model.to(device)
    # Clones: a forward that mutates its inputs must not change the recorded reference inputs.
    args = tree_map(lambda leaf: leaf.to(device).clone() if isinstance(leaf, torch.Tensor) else leaf, real)
    with torch.no_grad():
        return [output.detach() for output in _flatten_outputs(model(*args))]
