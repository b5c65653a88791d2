# Own task (Planner golden test, conv family): a residual block's tail — Conv2d with a bias, the
# block's input added back, then a ReLU; the input and the output are both read and written once
# by the epilogue pass.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x) + x)


batch_size = 2
channels = 16
size = 16


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return [channels]
