# Own task: attention with a boolean padding mask given as an input ([batch, 1, 1, keys], True =
# padding: masked_fill with -inf there) and an additive bias input ([seq, keys], added to the scaled
# scores). Head dim 128, 50 queries against 70 keys.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5

    def forward(self, q, k, v, pad, bias):
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale + bias
        scores = scores.masked_fill(pad, float("-inf"))
        return torch.matmul(scores.softmax(dim=-1), v)


batch_size = 2
heads = 2
queries = 50
keys = 70
head_dim = 128


def get_inputs():
    q = torch.randn(batch_size, heads, queries, head_dim)
    k = torch.randn(batch_size, heads, keys, head_dim)
    v = torch.randn(batch_size, heads, keys, head_dim)
    pad = torch.rand(batch_size, 1, 1, keys) < 0.2
    pad[..., 0] = False  # every row keeps a key
    bias = torch.randn(queries, keys)
    return [q, k, v, pad, bias]


def get_init_inputs():
    return [head_dim]
