# Own task (Planner golden test, verified on the GPU): GroupNorm, tanh, a residual add, then a
# logsumexp over the channels. Only that reduction reads the normalized tensor, so the group norm
# is a statistics reduction and the normalization (with its affine, the tanh and the add) runs as
# the logsumexp's prologue: the tensor is read twice and never written.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)
        with torch.no_grad():  # a non-trivial affine
            self.norm.weight.uniform_(0.5, 1.5)
            self.norm.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        y = torch.tanh(self.norm(x))
        return torch.logsumexp(x + y, dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(8, 32, 24, 24) * 2.0 + 0.5]


def get_init_inputs():
    return [32, 8]
