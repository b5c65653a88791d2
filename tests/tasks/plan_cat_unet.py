# Own task (Planner golden test, GPU check): a UNet-like level. The encoder's features (conv +
# ReLU) are max-pooled, convolved, upsampled back (nearest, and bilinear both with and without
# align_corners) and concatenated with the encoder features along channels before the decoder
# convolution; a constant pad with a non-zero value pads the decoder input.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.encode = nn.Conv2d(3, channels, 3, padding=1)
        self.bottom = nn.Conv2d(channels, channels, 3, padding=1)
        self.decode = nn.Conv2d(4 * channels, channels, 3)

    def forward(self, x):
        skip = torch.relu(self.encode(x))
        low = torch.relu(self.bottom(F.max_pool2d(skip, 2)))
        up_nearest = F.interpolate(low, scale_factor=2, mode="nearest")
        up_linear = F.interpolate(low, scale_factor=2, mode="bilinear", align_corners=False)
        up_corners = F.interpolate(low, size=skip.shape[-2:], mode="bilinear", align_corners=True)
        joined = torch.cat([skip, up_nearest, up_linear, up_corners], 1)
        return self.decode(F.pad(joined, (1, 1, 1, 1), value=0.5))


def get_inputs():
    return [torch.randn(2, 3, 12, 16)]


def get_init_inputs():
    return [4]
