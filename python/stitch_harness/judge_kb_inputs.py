"""Inputs and outputs of a KernelBench task as eval-kb handles them (no graph.json needed).

Shared by the judge side (eval_kb) and the candidate side (judge_kb_candidate): drawing get_inputs()
under a seed on the right device, rebuilding the call from tensors, flattening what forward returns.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

# get_inputs() results larger than this are drawn on the GPU directly (torch.device context).
ON_DEVICE_INPUT_BYTES = 1 << 30


@dataclasses.dataclass
class CallTemplate:
    """get_inputs()'s pytree structure; None marks where a tensor goes."""

    spec: Any
    leaves: list

    def build(self, tensors: list[torch.Tensor]) -> list:
        it = iter(tensors)
        return tree_unflatten([next(it) if leaf is None else leaf for leaf in self.leaves],
                              self.spec)


def draw_inputs(get_inputs, seed: int, device: torch.device,
                on_device: bool = False) -> tuple[list[torch.Tensor], CallTemplate]:
    """get_inputs() under torch.manual_seed(seed); tensors moved to `device`. With `on_device`, the
    call runs inside `with torch.device(device)` so large tensors are created there directly."""
    torch.manual_seed(seed)
    if on_device and device.type == "cuda":
        with torch.device(device):
            raw = get_inputs()
    else:
        raw = get_inputs()
    leaves, spec = tree_flatten(list(raw))
    tensors = [leaf.to(device) for leaf in leaves if isinstance(leaf, torch.Tensor)]
    template = CallTemplate(spec, [None if isinstance(leaf, torch.Tensor) else leaf
                                   for leaf in leaves])
    return tensors, template


def call_template(get_inputs) -> tuple[CallTemplate, int]:
    """get_inputs()'s structure and the bytes of its tensors, from a call on the meta device (no
    memory is touched, so a task with 6 GB inputs costs nothing here)."""
    with torch.device("meta"):
        raw = get_inputs()
    leaves, spec = tree_flatten(list(raw))
    template = CallTemplate(spec, [None if isinstance(leaf, torch.Tensor) else leaf
                                   for leaf in leaves])
    return template, input_bytes([leaf for leaf in leaves if isinstance(leaf, torch.Tensor)])


def refresh_in_place(tensor: torch.Tensor, distribution: str) -> bool:
    """Re-draws `tensor` in place from `distribution` (graph-format.md names) with the device's
    default generator. False when the distribution is not one to redraw (fixed, unknown).

    Timing re-randomizes between iterations; doing it with one device kernel rather than a Python
    get_inputs() call on the CPU matters: measured on an H200, a CPU redraw before each iteration
    made a 0.1 ms eager model time 2x slower than plain events (the host and GPU go cold between
    calls), an in-place device redraw 1.1-1.2x (the device-wide synchronize)."""
    kind, _, rest = distribution.partition(":")
    if kind == "randn" and tensor.dtype.is_floating_point:
        tensor.normal_()
    elif kind == "rand" and tensor.dtype.is_floating_point:
        tensor.uniform_()
    elif kind == "randint" and rest:
        low, high = (int(v) for v in rest.split(":"))
        tensor.random_(low, high)
    elif kind == "bernoulli" and rest and tensor.dtype != torch.bool:
        tensor.bernoulli_(float(rest))
    elif kind == "bernoulli" and rest:
        tensor.copy_(torch.rand(tensor.shape, device=tensor.device) < float(rest))
    else:
        return False
    return True


def input_distributions(task) -> list[str]:
    """The distribution of each tensor get_inputs() returns, as capture records it (from the
    factory that made it), found without allocating anything."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    from .task_inputs import fake_inputs

    inputs, distributions = fake_inputs(task, 0, FakeTensorMode(allow_non_fake_inputs=True))
    leaves = tree_flatten(list(inputs))[0]
    return [d for leaf, d in zip(leaves, distributions) if isinstance(leaf, torch.Tensor)]


def make_refresher(get_inputs, distributions: list[str], device: torch.device,
                   on_device: bool):
    """A timing.Refresh that redraws a set in place: per distribution on the device, through a
    seeded get_inputs() call (os.urandom seed) for tensors without one."""
    import os

    def refresh(index, tensors):
        redraw = [not refresh_in_place(t, d) for t, d in zip(tensors, distributions)]
        redraw += [True] * (len(tensors) - len(redraw))
        if any(redraw):
            fresh, _ = draw_inputs(get_inputs, int.from_bytes(os.urandom(8), "little"), device,
                                   on_device)
            for target, value, needed in zip(tensors, fresh, redraw):
                if needed:
                    target.copy_(value)

    return refresh


def input_bytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def flatten_outputs(result: Any) -> tuple[list[torch.Tensor], list[str]]:
    """Tensor leaves of what forward returned, and problems: non-tensor leaves, tensor subclasses
    (a lazy result computed on access, HACKS row 4)."""
    leaves = tree_flatten(result)[0]
    tensors, problems = [], []
    for index, leaf in enumerate(leaves):
        if not isinstance(leaf, torch.Tensor):
            problems.append(f"output leaf {index} is a {type(leaf).__name__}, not a tensor")
        elif type(leaf) not in (torch.Tensor, torch.nn.Parameter):
            problems.append(f"output {index} is a {type(leaf).__qualname__}, a tensor subclass "
                            "(possibly a lazy result)")
        else:
            tensors.append(leaf)
    return tensors, problems
