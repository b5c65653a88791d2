# Own task (Planner and emitter golden tests): a compute-bound Linear -> ReLU -> scale. At this size
# the planner's time model prefers split-precision 3xTF32 (FP32-accurate on tensor cores) to strict
# FP32; the weight is a parameter, so it is split once at init and only x is split per forward.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.linear(x)) * self.scale


batch_size = 1024
in_features = 2048
out_features = 2048
scale = 0.5


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
