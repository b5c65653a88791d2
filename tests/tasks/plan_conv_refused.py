# Own task (Planner refusal test): a convolution, which the built-in Coder does not cover yet; the
# Planner must refuse it, naming the node and the op.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


batch_size = 4
channels = 16
size = 32


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return [channels]
