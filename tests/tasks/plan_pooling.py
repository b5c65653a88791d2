# Own task (Planner golden test, GPU check): the pooling family as direct kernels — max pool 2-d
# with padding, dilation and ceil mode followed by an elementwise chain (an epilogue), max pool 1-d
# returning indices, average pools 1-d / 3-d with count_include_pad off and a divisor override,
# adaptive max and average pools, and a global average pool (a mean).
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.max2d = nn.MaxPool2d(3, stride=2, padding=1, dilation=2, ceil_mode=True)
        self.max1d = nn.MaxPool1d(4, stride=3, padding=2, return_indices=True)
        self.avg3d = nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        self.adaptive_max = nn.AdaptiveMaxPool2d((5, 3))
        self.adaptive_avg = nn.AdaptiveAvgPool2d((4, 7))
        self.global_avg = nn.AdaptiveAvgPool2d(1)

    def forward(self, x, seq, vol):
        a = torch.relu(self.max2d(x)) * 2.0 + 1.0
        b, indices = self.max1d(seq)
        c = self.avg3d(vol)
        d = F.avg_pool2d(x, 2, stride=1, padding=1, divisor_override=3)
        e = F.avg_pool1d(seq, 3, stride=2, padding=1)
        f = self.adaptive_max(x)
        g = self.adaptive_avg(x)
        h = self.global_avg(x)
        return a, b, indices, c, d, e, f, g, h


def get_inputs():
    return [torch.randn(2, 3, 13, 11), torch.randn(2, 4, 29), torch.randn(2, 2, 7, 8, 9)]


def get_init_inputs():
    return []
