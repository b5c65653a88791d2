# Own task: Linear then Dropout(p=0.25), built in training mode as KernelBench does, so the dropout
# mask is random (capture turns it into a boolean input of kind `random`).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, p):
        super().__init__()
        self.fc = nn.Linear(features, features)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(self.fc(x))


batch_size = 16
features = 64
p = 0.25


def get_inputs():
    return [torch.randn(batch_size, features)]


def get_init_inputs():
    return [features, p]
