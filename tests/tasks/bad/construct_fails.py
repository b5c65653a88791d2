# Bad task: Model's constructor raises (capture: construct_failed, exit 1).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        raise TypeError(f"cannot build a model with {features} features")

    def forward(self, x):
        return x


def get_inputs():
    return [torch.randn(4, 8)]


def get_init_inputs():
    return [8]
