# Honest (if slow) ModelNew for relu_task.py: no PyTorch compute at all, the arithmetic is plain
# Python on the values read out with tolist(). The false-positive test: it must pass.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows = x.tolist()
        result = [[value if value > 0.0 else 0.0 for value in row] for row in rows]
        return torch.tensor(result, dtype=x.dtype).to(x.device)
