# Own task (Planner golden test, GPU check): a DenseNet-like dense block. Each layer (BatchNorm in
# training mode, ReLU, 3x3 convolution) reads the concatenation of every earlier feature map and
# its output joins the next concatenation — torch.cat of a growing list. The planner nests each
# cat in the next one and places the whole chain in the last cat's buffer: every layer's
# convolution writes its channel slice there, and only the block's input is copied.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, layers, in_channels, growth):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Sequential(
                nn.BatchNorm2d(in_channels + k * growth),
                nn.ReLU(inplace=True),
                nn.Conv2d(in_channels + k * growth, growth, 3, padding=1, bias=False),
                nn.ReLU(),
            )
            for k in range(layers)
        )

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


def get_inputs():
    return [torch.randn(2, 8, 12, 10)]


def get_init_inputs():
    return [3, 8, 4]
