# Own task (Planner golden test, conv family): a Conv2d of 12 input channels to 96 with a bias, a
# scale, then the minimum over the output channels (keepdim) — KernelBench level 2's convolution +
# channel reduction pattern past the direct kernel's channels. Planned with the implicit GEMM
# forced, which reduces the channels as it stores (kernels/conv_igemm_tf32x3.cuh:
# set_channel_reduction, one tile holding a position's 96 channels): the 96-channel result is
# never written.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = self.conv(x) * 2.0
        return torch.min(x, dim=1, keepdim=True)[0]


batch_size = 2
in_channels = 12
out_channels = 96
height, width = 10, 30


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
