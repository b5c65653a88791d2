# Own task (Planner golden test, GPU check): a DenseNet-like dense block whose feature maps are
# large (2 x 16 x 512 x 512: 32 MiB each). Each layer's training-mode BatchNorm takes statistics of
# the cat of every earlier feature; a channel's statistics depend on that channel alone, so the
# plan reduces each feature once (layer k reduces only the newest 16 channels, not 16 (k + 1)) and
# the layers' statistics are cats of the per-feature results, written in place by the reductions
# (plan/lower_norms.cc, channel_stats). The running statistics are updated per layer as PyTorch
# does. Small feature maps keep one reduction over the whole cat (plan_cat_dense_block).
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
            )
            for k in range(layers)
        )

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


def get_inputs():
    return [torch.rand(2, 16, 512, 512)]


def get_init_inputs():
    return [3, 16, 16]
