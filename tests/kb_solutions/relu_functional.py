# Adversarial ModelNew for relu_task.py: calls torch.nn.functional.relu (HACKS row 1).
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.relu(x)
