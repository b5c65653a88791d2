# Own task (capture test, tests/python/test_capture_conditioning.py): bn_pair_moderate.py, whose
# captured graph is wrong. Forward computes one thing under torch.export and another when run, 1e-3
# of the output apart, about as far as FP32 rounding moves this ill-conditioned output: the graph
# disagrees with the model in FP64 too, so capture must refuse it as reference_failed, a capture
# bug, however ill-conditioned the model.
import torch
import torch.nn as nn
import torch.nn.functional as F

spread = 1e-4


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm = nn.BatchNorm2d(channels, eps=spread**2)

    def forward(self, x):
        y = 10.0 * self.norm(F.silu(x))
        return y * 1.001 if torch.compiler.is_exporting() else y


batch_size = 2
channels = 256


def get_inputs():
    return [2.0 + spread * torch.randn(batch_size, channels, 1, 1)]


def get_init_inputs():
    return [channels]
