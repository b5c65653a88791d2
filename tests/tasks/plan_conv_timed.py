# Own task (Planner golden test, conv family): level 2's few-channel convolution (8 -> 64 channels,
# 3x3, K = 72) with a bias and ReLU. The time model rates the implicit GEMM behind strict-FP32
# cuDNN and the direct FP32 kernel within its error of it, so the plan takes the direct kernel
# (bias and ReLU in its stores) with cuDNN as its alternative: the program times the two at init
# (kernels/conv_engine_timing.cuh) and runs the faster, cuDNN followed by the bias + ReLU pass.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3)

    def forward(self, x):
        return torch.relu(self.conv(x))


batch_size = 16
in_channels = 8
out_channels = 64
size = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
