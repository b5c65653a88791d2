# Adversarial ModelNew for matmul_task.py: "optimizes" by calling torch.matmul (HACKS row 1).
# Must be rejected as hacked, the reason naming torch.matmul.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)
