# Own task (Planner refusal test): a log-cumulative-sum-exp (a scan the built-in Coder does not
# cover: only cumsum and cumprod are ScanSpecs); the Planner must refuse it, naming the node and
# the op.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.logcumsumexp(x, dim=1)


batch_size = 4
features = 64


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return []
