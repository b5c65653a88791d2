# Own task (Planner golden test): softmax over the last dim of a scaled input; the scale becomes
# the row kernel's prologue.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, temperature):
        super().__init__()
        self.temperature = temperature

    def forward(self, x):
        return torch.softmax(x / self.temperature, dim=-1)


batch_size = 1024
dim = 4096
temperature = 2.0


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [temperature]
