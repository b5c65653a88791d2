# Own task (Planner golden test, GPU check): BatchNorm2d in training mode, as KernelBench builds
# models (no .eval()): batch statistics over N, H, W in one Welford pass read in place through a
# channels-first view, the normalisation and affine fused with the ReLU and the scale that follow.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(self.norm(x)) * 0.5


batch_size = 8
channels = 16
height = 12
width = 10


def get_inputs():
    return [torch.randn(batch_size, channels, height, width) * 3.0 + 1.0]


def get_init_inputs():
    return [channels]
