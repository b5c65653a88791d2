# Own task (Planner golden test, conv family): a grouped Conv2d (groups 2) then a depthwise 3x3
# Conv2d (groups = channels) and a per-channel scale and shift, as in MobileNet blocks.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, channels):
        super().__init__()
        self.grouped = nn.Conv2d(in_channels, channels, 3, padding=1, groups=2)
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.scale = nn.Parameter(torch.randn(channels, 1, 1))
        self.shift = nn.Parameter(torch.randn(channels, 1, 1))

    def forward(self, x):
        return self.depthwise(self.grouped(x)) * self.scale + self.shift


batch_size = 2
in_channels = 8
channels = 16
size = 12


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, channels]
