# A tiny KernelBench-form task for the adapters tests: two outputs, a nested module and a buffer, so
# that the params the adapters pass can be checked for order and identity. The fake program
# (fake_program.c) computes exactly this forward on host memory.
import torch
import torch.nn as nn

features = 8
hidden = 3
batch = 4


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(features))
        self.register_buffer("scale", torch.rand(features) + 1.0)
        self.inner = nn.Linear(features, hidden)

    def forward(self, x):
        return x * 2 + self.bias, self.inner.weight * self.scale


def get_inputs():
    return [torch.randn(batch, features)]


def get_init_inputs():
    return [features, hidden]
