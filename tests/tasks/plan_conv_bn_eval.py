# Own task (Planner golden test, conv family): Conv2d → BatchNorm2d → ReLU built in eval mode, with
# running statistics and affine params of its own: the planner folds the BatchNorm into the
# convolution's weight and bias at init (pass fold-batchnorm, issue 13).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.bn = nn.BatchNorm2d(out_channels)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)
        self.eval()

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


batch_size = 8
in_channels = 16
out_channels = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, 32, 32)]


def get_init_inputs():
    return [in_channels, out_channels]
