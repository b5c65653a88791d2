# Own task (capture test, tests/python/test_capture_conditioning.py): moderately ill-conditioned,
# like KernelBench's UNet-softmax. Training-mode BatchNorm over a batch of 2 at 1x1, of features
# that sit within 1e-4 of one value, with eps the size of their spread: the output rests on the
# difference of two nearly equal FP32 numbers, so FP32 rounding alone moves it by ~1e-3 (relative
# error norm against FP64), and the captured graph (SiLU decomposed to x * sigmoid(x), a rounding
# apart from eager's fused SiLU) disagrees with eager by as much. In FP64 they agree: capture
# accepts it and records the conditioning.
import torch
import torch.nn as nn
import torch.nn.functional as F

spread = 1e-4


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
