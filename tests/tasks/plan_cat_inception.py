# Own task (Planner golden test, GPU check): an inception-like block. Four branches — a 1x1
# convolution, a 1x1 then 3x3 convolution, a 1x1 then 5x5, and a 3x3 max pool then 1x1
# convolution — concatenated along channels. The bias add of each branch's last convolution (its
# epilogue) stores into the branch's slice of the output; the 1x1 branch has no bias, so cuDNN
# writes its result whole and a copy moves it into its slice.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, c1, r3, c3, r5, c5, pool_proj):
        super().__init__()
        self.branch1 = nn.Conv2d(in_channels, c1, 1, bias=False)
        self.branch3 = nn.Sequential(nn.Conv2d(in_channels, r3, 1), nn.Conv2d(r3, c3, 3, padding=1))
        self.branch5 = nn.Sequential(nn.Conv2d(in_channels, r5, 1), nn.Conv2d(r5, c5, 5, padding=2))
        self.branch_pool = nn.Sequential(
            nn.MaxPool2d(3, stride=1, padding=1), nn.Conv2d(in_channels, pool_proj, 1)
        )

    def forward(self, x):
        branches = [self.branch1(x), self.branch3(x), self.branch5(x), self.branch_pool(x)]
        return torch.cat(branches, 1)


def get_inputs():
    return [torch.randn(2, 10, 8, 8)]


def get_init_inputs():
    return [10, 4, 3, 6, 2, 3, 5]
