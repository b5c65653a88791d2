# Own task (Planner golden test, conv family): a Conv3d of 3 input channels, a ReLU, then the mean
# over the output channels (no keepdim) plus a constant. Planned with the direct convolution
# forced: a sum over the channels as the kernel stores, the mean's division by the channel count
# in its reduce epilogue.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, 3)

    def forward(self, x):
        return torch.relu(self.conv(x)).mean(dim=1) + 0.25


batch_size = 2
in_channels = 3
out_channels = 24
depth, height, width = 5, 8, 36


def get_inputs():
    return [torch.randn(batch_size, in_channels, depth, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
