# Adversarial ModelNew for relu_task.py: inherits the reference's forward (HACKS row 18).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


class ModelNew(Model):
    pass
