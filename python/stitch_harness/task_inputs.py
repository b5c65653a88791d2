"""Build a task's inputs: fake ones for export (nothing allocated) and real ones for the reference.

get_inputs() of some KernelBench level-1 tasks makes a 6 GB tensor, so capture calls it under
FakeTensorMode: every tensor has a shape, dtype and strides but no storage. While it runs, a
TorchFunctionMode watches which factory made each returned tensor, which gives the input's
`distribution` in graph.json (rand, randn, randint:LOW:HIGH, fixed, or unknown).
"""
import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten, tree_map

from .errors import CaptureError, Category, describe_exception

# Ops that only relabel or reshape their argument: the result keeps the argument's distribution.
_PASSTHROUGH = {
    "to", "float", "double", "half", "bfloat16", "bool", "long", "int", "short", "char", "byte",
    "contiguous", "clone", "detach", "view", "reshape", "expand", "t", "transpose", "permute",
    "squeeze", "unsqueeze", "flatten", "cpu", "cuda", "requires_grad_", "__get__",
}


def _ints(values):
    return [value for value in values if isinstance(value, int) and not isinstance(value, bool)]


def _random_factory_distribution(name, args, kwargs):
    """The distribution a random factory draws from, or None if `name` is not a random factory."""
    if name in ("rand", "rand_like"):
        return "rand"
    if name in ("randn", "randn_like"):
        return "randn"
    if name in ("randint", "randint_like"):
        # randint([low,] high, size) and randint_like(tensor, [low,] high); the size is not an int.
        ints = _ints(args)
        if "high" in kwargs:
            low, high = kwargs.get("low", ints[0] if ints else 0), kwargs["high"]
        elif len(ints) >= 2:
            low, high = ints[0], ints[1]
        elif len(ints) == 1:
            low, high = kwargs.get("low", 0), ints[0]
        else:
            return "unknown"
        return f"randint:{low}:{high}"
    if name in ("bernoulli", "bernoulli_"):
        p = kwargs.get("p", args[1] if len(args) > 1 else None)
        if isinstance(p, (int, float)) and not isinstance(p, bool):
            return f"bernoulli:{float(p)}"
        return "unknown"
    if name == "uniform_":
        low = args[1] if len(args) > 1 else kwargs.get("from", 0.0)
        high = args[2] if len(args) > 2 else kwargs.get("to", 1.0)
        return "rand" if (low, high) == (0, 1) else "unknown"
    if name in ("normal", "normal_"):
        mean = args[1] if name == "normal_" and len(args) > 1 else kwargs.get("mean", 0.0)
        std = args[2] if name == "normal_" and len(args) > 2 else kwargs.get("std", 1.0)
        return "randn" if (mean, std) == (0, 1) else "unknown"
    if name in ("random_", "exponential_", "geometric_", "log_normal_", "cauchy_", "randperm",
                "multinomial", "poisson"):
        return "unknown"
    return None


class _DistributionTracker(TorchFunctionMode):
    """Records, for every tensor made while active, the distribution of its values."""

    def __init__(self):
        super().__init__()
        self.distribution = {}  # id(tensor) -> distribution
        self._alive = []        # keep tensors alive so ids stay unique

    def _tensors(self, value):
        if isinstance(value, torch.Tensor):
            yield value
        elif isinstance(value, (list, tuple)):
            for item in value:
                yield from self._tensors(item)
        elif isinstance(value, dict):
            for item in value.values():
                yield from self._tensors(item)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        name = getattr(func, "__name__", "")
        sources = [self.distribution.get(id(t), "fixed") for t in self._tensors((args, kwargs))]
        produced = _random_factory_distribution(name, args, kwargs)
        if produced is None:
            if name in _PASSTHROUGH and len(sources) == 1:
                produced = sources[0]
            elif all(source == "fixed" for source in sources):
                # torch.tensor / ones / arange ..., or arithmetic on such values only.
                produced = "fixed"
            else:
                produced = "unknown"
        for tensor in self._tensors(result):
            self.distribution[id(tensor)] = produced
            self._alive.append(tensor)
        return result


def _call_get_inputs(task):
    try:
        inputs = task.get_inputs()
    except Exception as exc:
        raise CaptureError(Category.inputs_failed, f"get_inputs() failed: {describe_exception(exc)}") from exc
    if not isinstance(inputs, (list, tuple)):
        raise CaptureError(Category.inputs_failed,
                           f"get_inputs() returned {type(inputs).__name__}, expected a list")
    return list(inputs)


def fake_inputs(task, seed, fake_mode):
    """get_inputs() under `fake_mode` (tensors without storage).

    Returns (inputs, distributions): the list get_inputs() returned, and the distribution of each of
    its pytree leaves in tree_flatten order (the order torch.export numbers its user inputs).
    A get_inputs() that cannot run on fake tensors (it reads values: .item(), numpy) runs for real
    and its tensors are then wrapped as fake.
    """
    tracker = _DistributionTracker()
    torch.manual_seed(seed)
    try:
        with fake_mode, tracker:
            inputs = _call_get_inputs(task)
    except CaptureError:
        tracker = _DistributionTracker()
        torch.manual_seed(seed)
        with tracker:
            inputs = _call_get_inputs(task)
    distributions = [tracker.distribution.get(id(leaf), "unknown") if isinstance(leaf, torch.Tensor)
                     else "fixed" for leaf in tree_flatten(inputs)[0]]

    def as_fake(leaf):
        # Contiguous, as the judge and the runner hand inputs over (and as the files store them).
        if isinstance(leaf, torch.Tensor) and not isinstance(leaf, FakeTensor):
            leaf = fake_mode.from_tensor(leaf)
        return leaf.contiguous() if isinstance(leaf, torch.Tensor) else leaf

    return tree_map(as_fake, inputs), distributions


def real_inputs(task, seed):
    """get_inputs() for real, seeded like KernelBench (manual_seed(seed) right before the call),
    with every tensor made contiguous (see fake_inputs)."""
    torch.manual_seed(seed)
    return tree_map(lambda leaf: leaf.contiguous() if isinstance(leaf, torch.Tensor) else leaf,
                    _call_get_inputs(task))
