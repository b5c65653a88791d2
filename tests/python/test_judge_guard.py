"""judge_compute_guard.py: PyTorch compute is refused in a candidate's forward, plumbing is not."""

import pytest
import torch
import torch.nn.functional as F

from test_judge_support import apply_marks, gpu  # noqa: F401

from stitch_harness.judge_compute_guard import (ComputeGuard, ComputeViolation,
                                                profiled_violations)

X = torch.randn(8, 8)

BLOCKED = {
    "torch.matmul": lambda: torch.matmul(X, X),
    "Tensor.mm": lambda: X.mm(X),
    "torch.nn.functional.relu": lambda: F.relu(X),
    "torch.nn.functional.linear": lambda: F.linear(X, X),
    "Tensor.sum": lambda: X.sum(),
    "Tensor.add": lambda: X + 1,
    "aten.mm": lambda: torch.ops.aten.mm(X, X),
    "torch.relu": lambda: torch.relu(X),
}

ALLOWED = {
    "views": lambda: X.view(64).reshape(4, 16).permute(1, 0).contiguous()[1:3].t().unsqueeze(0),
    "allocation": lambda: (torch.empty_like(X), torch.empty(3, 4), torch.zeros(2),
                           X.new_empty(5), torch.full((2,), 1.5)),
    "moves": lambda: (X.to(torch.float64), X.cpu(), X.clone(), X.float()),
    "metadata": lambda: (X.shape, X.size(0), X.stride(), X.numel(), X.dtype, X.is_contiguous(),
                         X.data_ptr(), X.T),
    "copy_into": lambda: torch.empty_like(X).copy_(X),
    "slice_assign": lambda: torch.zeros(8, 8).__setitem__((slice(0, 2),), X[:2]),
    "host_values": lambda: torch.tensor(X.tolist()),
}


@pytest.mark.parametrize("name", sorted(BLOCKED))
def test_compute_is_blocked_and_named(name):
    guard = ComputeGuard()
    with pytest.raises(ComputeViolation) as raised:
        with guard:
            BLOCKED[name]()
    assert name in str(raised.value)
    assert guard.violations and guard.violations[0] == name


@pytest.mark.parametrize("name", sorted(ALLOWED))
def test_plumbing_is_allowed(name):
    guard = ComputeGuard()
    with guard:
        ALLOWED[name]()
    assert guard.violations == []


def test_a_caught_refusal_is_still_recorded():
    guard = ComputeGuard()
    with guard:
        try:
            X @ X
        except ComputeViolation:
            pass
        out = torch.zeros(8, 8)
    assert out.shape == (8, 8)
    assert guard.violations == ["Tensor.matmul"]


def test_guard_is_gone_after_the_block():
    with ComputeGuard():
        pass
    assert torch.relu(X).shape == X.shape  # compute works again outside the guard


def test_profiler_sees_compute_after_the_modes_are_popped():
    from torch.utils._python_dispatch import _disable_current_modes

    def escape():
        with torch._C.DisableTorchFunction(), _disable_current_modes():
            return torch.mm(X, X)

    guard = ComputeGuard()
    with guard:
        result, found = profiled_violations(escape)
    assert guard.violations == []  # the modes were bypassed...
    assert "aten.mm" in found      # ...but the profiler saw the op
    assert result.shape == (8, 8)


def test_profiler_does_not_report_the_internals_of_allowed_ops():
    _, found = profiled_violations(
        lambda: (X.contiguous().clone().to(torch.float64).view(64), torch.tensor(X.tolist())))
    assert found == []


def test_custom_operator_runs_but_its_aten_internals_are_profiled():
    @torch.library.custom_op("judgetest::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2  # ATen compute hidden inside a custom operator

    guard = ComputeGuard()
    with guard:
        result, found = profiled_violations(lambda: torch.ops.judgetest.twice(X))
    assert guard.violations == []  # custom operators are not refused by the modes
    assert torch.equal(result, X * 2)
    assert "aten.mul" in found      # but the profiler sees what they run


@apply_marks(gpu)
def test_guard_on_cuda_tensors():
    x = torch.randn(64, 64, device="cuda")
    guard = ComputeGuard()
    with pytest.raises(ComputeViolation):
        with guard:
            x @ x
    with ComputeGuard() as allowed:
        torch.empty_like(x).copy_(x).cpu()
    assert allowed.violations == []
