# Own task (Planner golden test, conv family): a ConvTranspose3d of 3 input channels with stride
# 2, padding 1 and output_padding 1 (as KernelBench level 2's have them), with a bias, then a
# HardSwish; its golden is planned with the direct FP32 convolution forced (its output phases'
# forward convolutions on it: ConvTransposeDirect, kernels/conv_transpose.cuh).
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose3d(in_channels, out_channels, 3, stride=2, padding=1,
                                     output_padding=1)

    def forward(self, x):
        return F.hardswish(self.up(x))


batch_size = 2
in_channels = 3
out_channels = 16
depth, height, width = 4, 5, 20


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
