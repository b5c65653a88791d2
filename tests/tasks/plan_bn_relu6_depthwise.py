# Own task: MobileNetV2 / EfficientNet's inverted-residual middle (issue 13, item 3): a training-mode
# BatchNorm and ReLU6 whose normalisation the depthwise convolution after it applies as it loads
# (fusion rule F10: no pass writes the normalised tensor), a 5x5 depthwise of stride 2 with a
# channel multiplier of 2, then a second BatchNorm + ReLU6 into a 3x3 depthwise whose padding must
# stay zero (ReLU6(BN(0)) is not zero).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn1 = nn.BatchNorm2d(channels)
        self.dw1 = nn.Conv2d(channels, 2 * channels, 5, stride=2, padding=2, groups=channels,
                             bias=False)
        self.bn2 = nn.BatchNorm2d(2 * channels)
        self.dw2 = nn.Conv2d(2 * channels, 2 * channels, 3, padding=1, groups=2 * channels)

    def forward(self, x):
        y = self.dw1(nn.functional.relu6(self.bn1(x)))
        return self.dw2(nn.functional.relu6(self.bn2(y)))


batch_size = 4
channels = 6


def get_inputs():
    return [torch.randn(batch_size, channels, 20, 20) * 2 + 0.5]


def get_init_inputs():
    return [channels]
