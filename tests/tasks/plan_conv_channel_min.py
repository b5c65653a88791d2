# Own task (Planner golden test, conv family): a Conv2d of 6 input channels with a bias, a scale,
# then the minimum over the output channels (keepdim) and a tanh — KernelBench level 2's
# convolution + channel reduction pattern. Planned with the direct convolution forced, which
# reduces the channels as it stores (kernels/conv_direct.cuh: ChannelReduction): the 20-channel
# result is never written.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        x = self.conv(x) * 1.5
        return torch.tanh(torch.min(x, dim=1, keepdim=True)[0])


batch_size = 2
in_channels = 6
out_channels = 20
height, width = 9, 70


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
