# Own task (Planner golden test, conv family): ConvTranspose2d with stride 2, padding 1 and
# output_padding 1, with a bias, then a ReLU.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, out_channels, 3, stride=2, padding=1,
                                     output_padding=1)

    def forward(self, x):
        return torch.relu(self.up(x))


batch_size = 2
in_channels = 16
out_channels = 8
size = 10


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
