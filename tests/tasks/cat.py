# Own task: two branches (Linear+ReLU and Linear+Tanh) concatenated with torch.cat along features.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, branch_features):
        super().__init__()
        self.left = nn.Linear(in_features, branch_features)
        self.right = nn.Linear(in_features, branch_features)

    def forward(self, x):
        return torch.cat([torch.relu(self.left(x)), torch.tanh(self.right(x))], dim=1)


batch_size = 32
in_features = 64
branch_features = 48


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, branch_features]
