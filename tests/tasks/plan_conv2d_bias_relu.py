# Own task (Planner golden test, conv family): Conv2d with a bias, 3x3, padding 1, then ReLU. The
# bias is lowered to an add; the add and the ReLU run as the convolution's one epilogue pass.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


batch_size = 2
in_channels = 8
out_channels = 16
size = 16


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
