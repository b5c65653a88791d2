# Adversarial ModelNew for relu_task.py: computes once (honestly, no PyTorch compute), then returns
# the same tensor on every later call (HACKS rows 5/6). Must be rejected (wrong or hacked).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cached = None

    def forward(self, x):
        if self.cached is None:
            rows = x.tolist()
            self.cached = torch.tensor([[v if v > 0.0 else 0.0 for v in row] for row in rows],
                                       dtype=x.dtype).to(x.device)
        return self.cached
