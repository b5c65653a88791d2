# Own task (Planner golden test, conv family, layout): two VGG-like 3x3 convolutions, each with a
# bias and ReLU, the first one's output read only by the second. Both run on the implicit-GEMM
# 3xTF32 kernel with the bias and ReLU in its stores, so the plan stores the value between them
# channels-last (plan/layout.h): the first kernel writes NHWC through its output map, the second
# gathers it as it is, without the per-run transpose of its input.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv2(torch.relu(self.conv1(x))))


batch_size = 8
in_channels = 64
channels = 128
size = 56


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, channels]
