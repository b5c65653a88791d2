# Own task (Planner golden test, GPU check): a SqueezeNet fire module. The squeeze 1x1 convolution
# and its ReLU feed two expand convolutions (1x1 and 3x3, each with a ReLU) whose outputs are
# concatenated along channels: each expand epilogue writes its ReLU straight into its channel
# slice of the output, no copy.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, squeeze, expand1x1, expand3x3):
        super().__init__()
        self.squeeze = nn.Conv2d(in_channels, squeeze, 1)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)

    def forward(self, x):
        s = torch.relu(self.squeeze(x))
        return torch.cat([torch.relu(self.expand1x1(s)), torch.relu(self.expand3x3(s))], 1)


def get_inputs():
    return [torch.randn(2, 12, 9, 11)]


def get_init_inputs():
    return [12, 6, 8, 10]
