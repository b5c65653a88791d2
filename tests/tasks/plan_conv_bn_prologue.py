# Own task (Planner golden test, GPU check; issue 13 item 3): two DenseNet layers, each a
# training-mode BatchNorm and ReLU before a 3x3 convolution. Where the convolution runs on the
# implicit GEMM (the second layer's; the first, of 32 channels, goes to the direct kernel and keeps
# the normalisation as a pass) the normalisation and ReLU are its prologue (fusion rule F10): the
# kernel applies them as it copies x into the layout its gather reads, so no pass writes the
# normalised tensor, and the padding pads the transformed input (ReLU(BN(0)) is not zero). That x
# is the first cat, a window of whole channels of the output's buffer (the cats are placed in
# place), read through its image stride. cuDNN is timed against either kernel at init; against the
# implicit GEMM it reads the kernel's transformed copy of x. codegen_conv_verify also runs it with
# the implicit GEMM forced (both layers with a prologue, nothing timed).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, growth):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv1 = nn.Conv2d(channels, growth, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels + growth)
        self.conv2 = nn.Conv2d(channels + growth, growth, 3, padding=1, bias=False)

    def forward(self, x):
        first = torch.cat([x, self.conv1(torch.relu(self.bn1(x)))], 1)
        return torch.cat([first, self.conv2(torch.relu(self.bn2(first)))], 1)


batch_size = 4
channels = 32
growth = 32
size = 112


def get_inputs():
    return [torch.randn(batch_size, channels, size, size) * 2 + 0.5]


def get_init_inputs():
    return [channels, growth]
