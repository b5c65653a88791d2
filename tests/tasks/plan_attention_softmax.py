# Own task: the plain pattern softmax(q @ k^T / sqrt(d)) @ v on [batch, heads, seq, head_dim] inputs,
# no mask. Head dim 80, sequence length 77 (ragged for every tile size).
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


batch_size = 2
heads = 4
seq_len = 77
head_dim = 80


def get_inputs():
    shape = (batch_size, heads, seq_len, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
