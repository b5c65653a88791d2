# Own task (Planner golden test, GPU check): a ShuffleNet channel shuffle between two grouped
# convolutions — view to [batch, groups, channels / groups, h, w], transpose the two channel
# dims, view back — then a flatten into a linear layer. The shuffle is one copy (or folded into
# the consumer's indexing); the flatten is a view.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, groups, classes):
        super().__init__()
        self.groups = groups
        self.conv1 = nn.Conv2d(channels, channels, 1, groups=groups)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, groups=groups)
        self.fc = nn.Linear(channels * 6 * 6, classes)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        b, c, h, w = x.size()
        x = x.view(b, self.groups, c // self.groups, h, w).transpose(1, 2).contiguous()
        x = self.conv2(x.view(b, c, h, w))
        return self.fc(torch.flatten(x, 1))


def get_inputs():
    return [torch.randn(2, 12, 6, 6)]


def get_init_inputs():
    return [12, 3, 5]
