# Own task (Planner golden, issue 16): a masked cumulative sum along the last dim, scaled after:
# one scan subtask (warp per row) with the mask multiply as its prologue and the scale as its
# epilogue — the masked-scan family of KernelBench level 1.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x, mask):
        return torch.cumsum(x * mask, dim=1) * self.scale


batch_size = 16
length = 300


def get_inputs():
    x = torch.randn(batch_size, length)
    mask = torch.randint(0, 2, x.shape).bool()
    return [x, mask]


def get_init_inputs():
    return [0.5]
