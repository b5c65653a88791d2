# Own task (Planner golden test, GPU check): BatchNorm1d in training mode over [N, C, L] (batch
# statistics over N and L in one Welford pass through a channels-first view) followed by GELU.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm1d(channels)

    def forward(self, x):
        return torch.nn.functional.gelu(self.norm(x))


batch_size = 16
channels = 24
length = 37


def get_inputs():
    return [torch.randn(batch_size, channels, length) * 2.0 - 0.5]


def get_init_inputs():
    return [channels]
