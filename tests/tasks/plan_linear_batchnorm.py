# Own task (Planner golden test): Linear -> BatchNorm1d in training mode (batch statistics) ->
# ReLU: GEMM, a mean/var column reduction, one normalizing elementwise pass.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return torch.relu(self.norm(self.linear(x)))


batch_size = 512
in_features = 1024
out_features = 1024


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
