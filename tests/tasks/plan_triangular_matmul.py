# Own task (Planner golden test): the lower triangle of a matrix product. torch.tril builds its mask
# from two index ranges inside forward; capture folds each constant-bounded arange into a constant
# param, so the mask is a broadcast compare of two loaded vectors in an elementwise epilogue.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.tril(torch.matmul(a, b))


m = 192
k = 96
n = 160


def get_inputs():
    return [torch.rand(m, k), torch.rand(k, n)]


def get_init_inputs():
    return []
