# Adversarial ModelNew for relu_task.py: monkey-patches the clocks at import time so every
# iteration looks instantaneous (HACKS row 13). Must be rejected as hacked.
import time

import torch
import torch.nn as nn

time.perf_counter = lambda: 0.0
torch.cuda.Event.elapsed_time = lambda self, other: 0.001


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows = x.tolist()
        return torch.tensor([[v if v > 0.0 else 0.0 for v in row] for row in rows],
                            dtype=x.dtype).to(x.device)
