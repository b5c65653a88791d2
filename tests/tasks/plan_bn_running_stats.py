# Own task: training-mode BatchNorm whose running-statistics updates the judge checks (issue 13):
# a small batch, so the unbiased running variance differs visibly from the biased one; a custom
# momentum; a cumulative average (momentum=None) after a linear layer.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, features):
        super().__init__()
        self.bn2d = nn.BatchNorm2d(channels, momentum=0.3)
        self.linear = nn.Linear(channels * 4 * 4, features)
        self.bn1d = nn.BatchNorm1d(features, momentum=None)

    def forward(self, x):
        y = torch.relu(self.bn2d(x))
        return self.bn1d(self.linear(y.flatten(1)))


batch_size = 2
channels = 8
features = 32


def get_inputs():
    return [torch.randn(batch_size, channels, 4, 4) * 3 + 1]


def get_init_inputs():
    return [channels, features]
