# Own task (Planner golden test, conv family): level 2's few-channel convolution (8 -> 64 channels,
# 3x3, K = 72) with a bias, a scale and a tanh — a chain the kernels' epilogue does not take. The
# plan takes the direct kernel with cuDNN as its alternative (as plan_conv_timed) and the whole
# chain as the kernel's output transform (plan/conv_epilogue.h): the program times the kernel
# against cuDNN plus one in-place pass applying the same transform, and runs the faster.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)

    def forward(self, x):
        return torch.tanh(self.conv(x) * 0.5)


batch_size = 16
in_channels = 8
out_channels = 64
size = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
