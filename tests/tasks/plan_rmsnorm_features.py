# Own task (Planner golden test): RMS normalization over the feature dim (dim 1) of [B, F, H, W],
# the way KernelBench level 1 writes it (x / sqrt(mean(x^2, dim=1) + eps)): the reduced dim is in
# the middle, so no row kernel: a column reduction then an elementwise pass.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, num_features, eps):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x):
        rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)
        return x / rms


batch_size = 16
features = 64
dim1 = 64
dim2 = 64
eps = 1e-5


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2)]


def get_init_inputs():
    return [features, eps]
