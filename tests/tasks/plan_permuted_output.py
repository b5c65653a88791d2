# Own task (issue 13, item 7): the reference returns a permuted view (not contiguous), as attention
# heads do before their final reshape. The program must write the output in the layout the judge
# allocates.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features, heads):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.heads = heads

    def forward(self, x):
        b, t, f = x.shape
        y = torch.relu(self.linear(x)).view(b, t, self.heads, f // self.heads)
        return y.permute(0, 2, 1, 3)


batch_size = 4
tokens = 64
features = 256
heads = 8


def get_inputs():
    return [torch.randn(batch_size, tokens, features)]


def get_init_inputs():
    return [features, heads]
