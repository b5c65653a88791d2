"""JudgeTask's model construction: the quick path (built on the meta device, filled from
weights.safetensors) must give exactly the model the seeded path gives, and must be refused
whenever the weights do not give a value to every tensor the model holds."""

import pytest
import torch

from stitch_harness.judge_task import JudgeTask, _weights_cover

CPU = torch.device("cpu")


def state_of(module):
    return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}


@pytest.mark.parametrize("task,construction", [
    ("mlp", "weights"),
    ("conv_bn_relu", "weights"),  # BatchNorm's running stats are persistent buffers
    ("layernorm", "weights"),
    ("lstm", "weights"),          # _flat_weights lists the registered parameters themselves
    ("mutated_attribute", "seeded"),  # a plain tensor attribute drawn in __init__
])
def test_quick_construction_gives_the_seeded_model(batch, task, construction):
    graph_dir = str(batch.dir(task))
    quick = JudgeTask(graph_dir, CPU)
    seeded = JudgeTask(graph_dir, CPU, quick_construction=False)
    assert quick.construction == construction
    assert seeded.construction == "seeded"
    quick_state, seeded_state = state_of(quick.model), state_of(seeded.model)
    assert quick_state.keys() == seeded_state.keys()
    for name in seeded_state:
        assert torch.equal(quick_state[name], seeded_state[name]), name
    assert quick.model.training == seeded.model.training
    inputs = seeded.draw_inputs(77)
    for ours, theirs in zip(quick.reference(inputs), seeded.reference(inputs)):
        assert torch.equal(ours, theirs)


def weights_of(module):
    return {name: tensor.detach().clone() for name, tensor in module.state_dict().items()}


class WithAttribute(torch.nn.Module):
    def __init__(self, container):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.extra = container(torch.randn(4))


class WithRegisteredList(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.flat = [self.fc.weight, self.fc.bias]


def test_weights_cover_accepts_only_a_model_they_describe_completely():
    linear = torch.nn.Linear(4, 3)
    assert _weights_cover(linear, weights_of(linear))
    assert not _weights_cover(linear, {"weight": linear.weight.detach()})  # bias missing
    wrong_shape = {"weight": torch.zeros(3, 5), "bias": torch.zeros(3)}
    assert not _weights_cover(linear, wrong_shape)
    wrong_dtype = {"weight": torch.zeros(3, 4, dtype=torch.float64), "bias": torch.zeros(3)}
    assert not _weights_cover(linear, wrong_dtype)

    # A tensor outside the registered parameters and buffers, however it is held.
    for container in (lambda t: t, lambda t: [t], lambda t: {"t": (1, t)}):
        model = WithAttribute(container)
        assert not _weights_cover(model, weights_of(model))
    # A list of the registered parameters themselves is fine (nn.LSTM's _flat_weights).
    model = WithRegisteredList()
    assert _weights_cover(model, weights_of(model))

    # A non-persistent buffer is in no state_dict, so no weights file can hold it.
    model = torch.nn.Linear(4, 4)
    model.register_buffer("table", torch.arange(4.0), persistent=False)
    assert not _weights_cover(model, weights_of(model))
    # Extra entries in the weights (graph constants) do not matter.
    linear_weights = weights_of(linear)
    linear_weights["_range_0"] = torch.arange(3)
    assert _weights_cover(linear, linear_weights)
