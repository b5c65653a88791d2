# Own task (Planner golden test): batched matmul with the second operand transposed by a view (read
# with op T by cuBLASLt, no copy) and a scale in the epilogue.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return torch.bmm(a, b.transpose(1, 2)) * self.scale


batch_size = 32
m = 256
k = 128
n = 384
scale = 0.125


def get_inputs():
    return [torch.randn(batch_size, m, k), torch.randn(batch_size, n, k)]


def get_init_inputs():
    return [scale]
