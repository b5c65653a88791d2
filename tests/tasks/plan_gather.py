# Own task (Planner golden, issue 16): the gathers of a windowed attention block (SwinV2's family).
# A bias table indexed by a buffer of positions (index.Tensor), and a cyclic shift of the windows
# (torch.roll, captured as index_select along a dim by computed indices), added together: two
# gather subtasks and one elementwise add.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, window, heads):
        super().__init__()
        self.window = window
        self.heads = heads
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
        positions = torch.randint(0, (2 * window - 1) ** 2, (window * window, window * window))
        self.register_buffer("position_index", positions)

    def forward(self, x):
        n = self.window * self.window
        bias = self.table[self.position_index.view(-1)].view(n, n, self.heads).permute(2, 0, 1)
        shifted = torch.roll(x, shifts=-2, dims=2)
        return shifted + bias


def get_inputs():
    return [torch.randn(2, 3, 16, 16)]


def get_init_inputs():
    return [4, 3]
