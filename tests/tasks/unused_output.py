# Own task: forward computes a value it never returns (dead code) and returns a tuple of two tensors.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x):
        hidden = self.fc(x)
        unused = torch.exp(hidden).sum()  # never returned
        return torch.relu(hidden), torch.sigmoid(hidden)


batch_size = 8
features = 32


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features]
