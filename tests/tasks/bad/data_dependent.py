# Bad task: control flow that depends on tensor values, which torch.export cannot trace
# (capture: export_failed, exit 1).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.sum() > 0:
            return torch.relu(x)
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return []
