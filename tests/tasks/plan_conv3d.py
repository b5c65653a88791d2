# Own task (Planner golden test, conv family): 3-d convolutions — Conv3d (padding 1) with a bias and
# a scale, then a strided ConvTranspose3d with a bias and a sigmoid.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, hidden, scale):
        super().__init__()
        self.conv = nn.Conv3d(channels, hidden, 3, padding=1)
        self.up = nn.ConvTranspose3d(hidden, channels, 2, stride=2)
        self.scale = scale

    def forward(self, x):
        return torch.sigmoid(self.up(self.conv(x) * self.scale))


batch_size = 2
channels = 3
hidden = 8
size = 8
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, channels, size, size, size)]


def get_init_inputs():
    return [channels, hidden, scale]
