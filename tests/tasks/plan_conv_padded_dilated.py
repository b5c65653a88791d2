# Own task (Planner golden test, conv family): asymmetric zero padding (F.pad) folded into a
# strided, dilated, padded Conv2d without a bias; a GELU epilogue.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1, dilation=2,
                              bias=False)

    def forward(self, x):
        return F.gelu(self.conv(F.pad(x, (1, 2, 0, 1))))


batch_size = 2
in_channels = 4
out_channels = 8
height = 17
width = 20


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
