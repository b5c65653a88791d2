# Own task (capture test, tests/python/test_capture_conditioning.py): hopelessly ill-conditioned,
# like KernelBench's EfficientNet-B2. bn_pair_moderate.py with features 100 times closer together:
# FP32 rounding alone moves the output by ~0.1 (relative error norm against FP64), past the cap up to
# which capture checks the graph in FP64 (compare.ILL_CONDITIONED_CAP), so it is refused as
# ill_conditioned.
import torch
import torch.nn as nn
import torch.nn.functional as F

spread = 1e-6


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels, eps=spread**2)

    def forward(self, x):
        return 10.0 * self.norm(F.silu(x))


batch_size = 2
channels = 256


def get_inputs():
    return [2.0 + spread * torch.randn(batch_size, channels, 1, 1)]


def get_init_inputs():
    return [channels]
