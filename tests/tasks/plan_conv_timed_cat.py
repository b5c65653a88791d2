# Own task (Planner golden test, conv family): plan_conv_timed's few-channel convolution (8 -> 64
# channels, 3x3, padding 1) with a bias and ReLU whose result is a piece of a cat along channels.
# The direct kernel, with cuDNN timed against it at init, folds bias and ReLU and writes its
# window of the cat's buffer through its output map; cuDNN writes the window through its image
# stride (ConvShape::y_image), then the bias + ReLU pass runs in place over it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return torch.cat([x, torch.relu(self.conv(x))], 1)


batch_size = 16
in_channels = 8
out_channels = 64
size = 128


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
