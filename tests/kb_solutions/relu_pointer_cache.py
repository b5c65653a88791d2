# Adversarial ModelNew for relu_task.py: caches results keyed on the input's data pointer, so a
# timing loop that reuses input buffers gets stale answers fast (HACKS row 5).
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.by_pointer = {}

    def forward(self, x):
        key = x.data_ptr()
        if key not in self.by_pointer:
            rows = x.tolist()
            self.by_pointer[key] = torch.tensor(
                [[v if v > 0.0 else 0.0 for v in row] for row in rows], dtype=x.dtype).to(x.device)
        return self.by_pointer[key]
