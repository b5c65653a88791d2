# Own task (Planner golden, issue 16): scans the other ways round. A reverse cumulative sum
# written with flips (flip -> cumsum -> flip over the scanned dim: one reverse scan reading the
# input in place), and a cumulative product along a middle dim of a flipped tensor (a thread per
# column, the flip a negative stride of its input).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        reverse = torch.cumsum(x.flip(1), dim=1).flip(1)
        product = torch.cumprod(y.flip(2), dim=1)
        return reverse, product


def get_inputs():
    return [torch.randn(8, 200), torch.rand(4, 24, 10) + 0.5]


def get_init_inputs():
    return []
