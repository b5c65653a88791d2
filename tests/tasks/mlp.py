# Own task: a three-layer MLP (Linear + ReLU twice, then Linear), KernelBench form.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_sizes, output_size):
        super().__init__()
        layers = []
        size = input_size
        for hidden in hidden_sizes:
            layers.append(nn.Linear(size, hidden))
            layers.append(nn.ReLU())
            size = hidden
        layers.append(nn.Linear(size, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


batch_size = 64
input_size = 512
hidden_sizes = [1024, 768]
output_size = 256


def get_inputs():
    return [torch.randn(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_sizes, output_size]
