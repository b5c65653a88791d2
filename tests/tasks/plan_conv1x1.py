# Own task (Planner golden test, conv family): a 1x1 Conv2d (stride 1, no padding, one group)
# without a bias, then a hardtanh — the pointwise convolution of bottleneck blocks.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.pointwise = nn.Conv2d(in_channels, out_channels, 1, bias=False)

    def forward(self, x):
        return F.hardtanh(self.pointwise(x), -1.0, 1.0)


batch_size = 2
in_channels = 32
out_channels = 64
size = 14


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
