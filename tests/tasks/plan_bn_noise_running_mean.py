# Own task: a running mean that is rounding noise (issue 13). The second BatchNorm's input is a 1x1
# convolution without bias of the first one's output, whose per-channel batch mean is exactly 0
# (beta starts at 0), so its running mean is exactly 0 too: ~1e-9 in FP32, differently in every
# order of additions (KernelBench's EfficientNet-B0 has 13 of these). The judge must settle it
# against FP64 (docs/verify-protocol.md, "The FP64 second opinion"), not fail the program.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, expanded):
        super().__init__()
        self.project = nn.Conv2d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bn_project = nn.BatchNorm2d(channels)
        self.expand = nn.Conv2d(channels, expanded, kernel_size=1, bias=False)
        self.bn_expand = nn.BatchNorm2d(expanded)

    def forward(self, x):
        y = self.bn_project(self.project(x))
        return torch.nn.functional.relu6(self.bn_expand(self.expand(y)))


batch_size = 4
channels = 24
expanded = 144


def get_inputs():
    return [torch.randn(batch_size, channels, 28, 28)]


def get_init_inputs():
    return [channels, expanded]
