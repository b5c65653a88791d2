# Own task (Planner golden test): a GEMM whose output is only ever summed over its features, after a
# scale. Linear algebra lets the planner sum the weight first: sum_n((x Wᵀ + b) / 2) =
# (x (Wᵀ 1) + sum(b)) / 2 — a matrix-vector product instead of a GEMM, the weight's row sums made
# once at init.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        x = self.linear(x)
        x = x / 2
        x = torch.sum(x, dim=1, keepdim=True)
        return x * self.scale


batch_size = 128
in_features = 512
out_features = 256
scale = 1.5


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
