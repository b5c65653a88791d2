# Own task (Planner golden test, conv family): ConvTranspose3d with stride 2, padding 1 and
# output_padding 1, with a bias, then a ReLU; its golden is planned with the implicit-GEMM 3xTF32
# convolution forced (its output phases' forward convolutions: kernels/conv_transpose.cuh).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.up = nn.ConvTranspose3d(in_channels, out_channels, 3, stride=2, padding=1,
                                     output_padding=1)

    def forward(self, x):
        return torch.relu(self.up(x))


batch_size = 2
in_channels = 8
out_channels = 12
size = 5


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size, size)]


def get_init_inputs():
    return [in_channels, out_channels]
