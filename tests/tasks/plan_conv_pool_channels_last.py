# Own task (Planner golden test, conv family, layout): AlexNet's block boundary, a 3x3 convolution
# with a bias and ReLU, a 3x3 stride-2 max pool (overlapping windows: a pooling kernel, where a
# pool whose windows tile its input is a reduction), another convolution with a bias and ReLU.
# Both convolutions run on the implicit-GEMM 3xTF32 kernel with the bias and ReLU in its stores;
# the plan stores the first one's result and the pool's channels-last (plan/layout.h): the pool
# reads and writes them channels fastest and the second convolution gathers its input as it is,
# without the per-run transpose.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.pool = nn.MaxPool2d(3, stride=2)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv2(self.pool(torch.relu(self.conv1(x)))))


batch_size = 8
in_channels = 64
channels = 128
size = 56


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, channels]
