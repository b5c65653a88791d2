# Own task: max pooling then average pooling of a 4-D tensor, summed with a global average.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.max_pool = nn.MaxPool2d(kernel_size, stride=2, padding=1)
        self.avg_pool = nn.AvgPool2d(kernel_size, stride=1)

    def forward(self, x):
        return self.avg_pool(self.max_pool(x))


batch_size = 4
channels = 8
height = width = 32
kernel_size = 3


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size]
