# Own task (Planner golden, issue 16): a flip feeding elementwise work (a view: negative strides,
# no copy) and a clamp with one tensor bound (SwinV2's clamp of its logit scale by a constant).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones(features)))

    def forward(self, x):
        bound = torch.log(torch.tensor(1.0 / 0.01, device=self.logit_scale.device))
        scale = torch.clamp(self.logit_scale, max=bound).exp()
        return torch.flip(x, dims=[0, 2]) * scale + x


def get_inputs():
    return [torch.randn(4, 6, 32)]


def get_init_inputs():
    return [32]
