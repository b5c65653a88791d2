# Own task (Planner golden test, conv family): a Conv3d of 3 input channels (27 products per
# output, as KernelBench level 2's 3-d convolutions have them) with a bias, then a scale and a
# sigmoid; its golden is planned with the direct FP32 convolution forced (kernels/conv_direct.cuh).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return torch.sigmoid(self.conv(x) * 2.0)


batch_size = 2
in_channels = 3
out_channels = 16
depth, height, width = 4, 6, 40


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
