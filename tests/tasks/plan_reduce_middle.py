# Own task (Planner golden test): sum, mean and argmax over the middle dim of [B, R, I]: three
# column reductions ([outer, reduce, inner] with inner > 1) and an elementwise combination.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        total = torch.sum(x, dim=self.dim)
        average = torch.mean(x, dim=self.dim)
        position = torch.argmax(x, dim=self.dim)
        return total - average * position.float()


batch_size = 32
reduce_size = 256
inner_size = 512


def get_inputs():
    return [torch.randn(batch_size, reduce_size, inner_size)]


def get_init_inputs():
    return [1]
