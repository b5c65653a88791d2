"""Blocks PyTorch compute while a candidate's ModelNew.forward runs (HACKS rows 1 and 18).

Two Python modes, layered:
  - a TorchFunctionMode sees every torch.* function, Tensor method and torch.nn.functional call made
    from Python and lets through only the names in ALLOWED_FUNCTIONS; anything from
    torch.nn.functional is refused by module, whatever its name;
  - a TorchDispatchMode sees every ATen op that reaches the dispatcher, including ops called from
    C++ extension code (at::mm inside a load_inline extension) and from composite functions, and
    lets through only the op packets in ALLOWED_ATEN_OPS.
A third, independent look: `profiled_violations` runs the call under the autograd profiler, whose
ATen records do not depend on the Python mode stack, so a candidate that pops the modes is still
seen. Custom kernels from extensions are not ATen ops and run freely.

The allowlist is what a hand-written kernel needs around it: allocation (empty*, zeros/ones/full
and their _like/new_ forms, fill_/zero_, torch.tensor from host data), views and metadata (view,
reshape, permute, transpose, expand, as_strided, slice/select/narrow/split/unbind, squeeze,
unsqueeze, flatten, size/stride/numel/dim/data_ptr/is_contiguous...), copies and device or dtype
moves (contiguous, clone, copy_, to, cuda, cpu, float), and reading scalars (item, tolist).
Everything else in PyTorch's own operator namespaces (COMPUTE_NAMESPACES: aten, prims,
torchvision...) is compute and is refused; operators of other namespaces are an extension's custom
ops and run. Every refusal is recorded (so catching the exception does not hide it) and raised as
ComputeViolation.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

ALLOWED_FUNCTIONS = frozenset({
    # metadata
    "size", "stride", "dim", "ndimension", "numel", "nelement", "element_size", "is_contiguous",
    "is_floating_point", "is_complex", "data_ptr", "storage_offset", "get_device", "untyped_storage",
    "is_pinned", "__get__", "__len__", "__hash__", "__index__", "__int__", "__float__", "__bool__",
    "item", "tolist", "dtype", "device", "_is_view",
    # views
    "view", "view_as", "reshape", "reshape_as", "permute", "transpose", "t", "contiguous", "expand",
    "expand_as", "as_strided", "unsqueeze", "squeeze", "flatten", "unflatten", "narrow", "select",
    "__getitem__", "split", "chunk", "unbind", "movedim", "swapaxes", "swapdims", "unfold",
    "detach", "detach_", "requires_grad_",
    # allocation
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "zero_", "fill_", "tensor", "as_tensor",
    # copies and moves
    "to", "cuda", "cpu", "copy_", "clone", "__setitem__", "float", "record_stream",
})

ALLOWED_ATEN_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros",
    "zeros_like", "new_zeros", "ones", "ones_like", "new_ones", "full", "full_like", "new_full",
    "zero_", "fill_", "resize_", "view", "_unsafe_view", "_reshape_alias", "reshape", "permute",
    "transpose", "t", "expand", "as_strided", "unsqueeze", "squeeze", "slice", "select", "split",
    "split_with_sizes", "unbind", "narrow", "alias", "detach", "lift_fresh", "unfold",
    "view_as_real", "view_as_complex", "clone", "copy_", "_to_copy", "_copy_from",
    "_copy_from_and_resize", "to", "contiguous", "_local_scalar_dense", "item", "is_same_size",
    "record_stream", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
    "_has_compatible_shallow_copy_type", "lift_fresh_copy", "flatten", "_reshape_copy",
    # no-op resolutions and aliases that tolist()/torch.tensor() go through
    "resolve_conj", "resolve_neg", "conj", "_conj", "_neg_view", "detach_", "lift",
})


# Operator namespaces that are PyTorch's own compute. Ops of other namespaces are custom operators
# (an extension's TORCH_LIBRARY ops) and run; what they call inside is seen by the profiler layer.
COMPUTE_NAMESPACES = frozenset({"aten", "prims", "prim", "quantized", "_quantized", "torchvision",
                                "mkldnn", "onednn", "fbgemm", "_c10d_functional", "c10d"})


def _op_allowed(op) -> bool:
    packet = op.overloadpacket if isinstance(op, torch._ops.OpOverload) else op
    namespace = getattr(packet, "_qualified_op_name", "aten::").split("::", 1)[0]
    if namespace not in COMPUTE_NAMESPACES:
        return True
    return namespace == "aten" and packet.__name__ in ALLOWED_ATEN_OPS


class ComputeViolation(RuntimeError):
    """A PyTorch compute op was called while compute is blocked."""


def describe_function(func: Callable) -> str:
    """'torch.matmul', 'Tensor.relu', 'torch.nn.functional.relu', 'Tensor.shape' ..."""
    name = getattr(func, "__name__", None) or repr(func)
    if name == "__get__" and hasattr(func, "__self__"):
        return f"Tensor.{getattr(func.__self__, '__name__', 'property')}"
    module = getattr(func, "__module__", None)
    qualname = getattr(func, "__qualname__", name)
    if module == "torch._C._nn":  # F.linear, F.gelu ... are builtins of this module
        return f"torch.nn.functional.{name}"
    if module and module.startswith("torch._ops."):  # torch.ops.aten.mm(...) called directly
        return f"{module[len('torch._ops.'):]}.{name}"
    if module and module.startswith("torch") and not module.startswith("torch._C"):
        return f"{module}.{qualname}" if "." not in qualname else f"{module}.{name}"
    if qualname.startswith(("TensorBase.", "_TensorBase.", "Tensor.")):
        return f"Tensor.{name}"
    return f"torch.{name}" if module in (None, "torch._C", "torch._C._VariableFunctions") else \
        f"{module}.{qualname}"


def _is_functional(func: Callable) -> bool:
    module = getattr(func, "__module__", "") or ""
    return module in ("torch.nn.functional", "torch._C._nn") or module.startswith(
        "torch.nn.functional.")


class _FunctionGuard(TorchFunctionMode):
    def __init__(self, record: Callable[[str], None]):
        super().__init__()
        self._record = record

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if isinstance(func, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            # torch.ops.<ns>.X calls, including the one the dispatch guard makes to run an allowed
            # op: judged like the dispatch guard judges them.
            allowed = _op_allowed(func)
        else:
            name = getattr(func, "__name__", "")
            allowed = not _is_functional(func) and name in ALLOWED_FUNCTIONS
        if not allowed:
            what = describe_function(func)
            self._record(what)
            raise ComputeViolation(f"{what} is PyTorch compute, blocked in ModelNew.forward")
        return func(*args, **kwargs)


class _DispatchGuard(TorchDispatchMode):
    def __init__(self, record: Callable[[str], None]):
        super().__init__()
        self._record = record

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if not _op_allowed(func):
            what = f"aten.{func.name().split('::', 1)[-1]}"
            self._record(what)
            raise ComputeViolation(f"{what} is PyTorch compute, blocked in ModelNew.forward")
        return func(*args, **kwargs)


class ComputeGuard:
    """Context manager: `with guard: model(*inputs)`. `violations` keeps every refused call."""

    def __init__(self):
        self.violations: list[str] = []

    def _record(self, what: str) -> None:
        if what not in self.violations:
            self.violations.append(what)

    def __enter__(self):
        self._function_mode = _FunctionGuard(self._record)
        self._dispatch_mode = _DispatchGuard(self._record)
        self._function_mode.__enter__()
        try:
            self._dispatch_mode.__enter__()
        except BaseException:
            self._function_mode.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self._dispatch_mode.__exit__(exc_type, exc, tb)
        finally:
            self._function_mode.__exit__(exc_type, exc, tb)
        return False


def _aten_packet(event_name: str) -> Optional[str]:
    if not event_name.startswith("aten::"):
        return None
    return event_name[len("aten::"):].split(".", 1)[0]


def profiled_violations(call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Runs `call` under the profiler; returns its result and the outermost ATen ops it ran that
    are not allowed. Ops nested inside another ATen op are that op's internals (clone -> copy_,
    mm -> resolve_conj) and are judged through their outermost op; ops inside a custom operator
    that is not ATen (an extension's own op calling at::mm) are outermost ATen ops and are seen."""
    import warnings

    from torch.profiler import ProfilerActivity, profile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            result = call()
    found: list[str] = []
    for event in prof.events():
        packet = _aten_packet(event.name)
        if packet is None or packet in ALLOWED_ATEN_OPS:
            continue
        parent = event.cpu_parent
        while parent is not None and _aten_packet(parent.name) is None:
            parent = parent.cpu_parent
        name = f"aten.{packet}"
        if parent is None and name not in found:
            found.append(name)
    return result, found
