# Own task (Planner golden test, verified on the GPU): logsumexp over the last dim, kept whole by
# capture: one logsumexp reduction reading x once.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.logsumexp(x, dim=1)


batch_size = 2048
dim = 4096


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
