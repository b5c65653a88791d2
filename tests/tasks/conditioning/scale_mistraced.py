# Own task (capture test, tests/python/test_capture_conditioning.py): a well-conditioned model
# whose captured graph is wrong (forward computes one thing under torch.export and another when
# run, 1e-2 apart). FP32 rounding cannot explain the disagreement: reference_failed.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * (2.02 if torch.compiler.is_exporting() else 2.0) + 1.0


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
