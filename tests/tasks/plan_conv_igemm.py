# Own task (Planner golden test, conv family): a VGG-like 3x3 convolution with a bias, then ReLU,
# large enough that the fp32 track's time model picks the implicit-GEMM 3xTF32 kernel
# (kernels/conv_igemm_tf32x3.cuh) over strict-FP32 cuDNN; the bias and ReLU fold into the
# kernel's stores (plan/conv_epilogue.h). 128 output channels: one full channel tile.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


batch_size = 8
in_channels = 64
out_channels = 128
size = 56


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
