# Own task: ReLU on a 4096 x 393216 float tensor (6 GiB), the input size of KernelBench level-1
# elementwise tasks. Capture must not allocate it: get_inputs() runs under FakeTensorMode.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
