# Own task: single-head causal self-attention with q/k/v projections and an explicit tril mask.
import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, embed_dim, max_seq_len):
        super().__init__()
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.proj = nn.Linear(embed_dim, embed_dim)
        self.register_buffer("mask", torch.tril(torch.ones(max_seq_len, max_seq_len)))

    def forward(self, x):
        seq_len = x.size(1)
        q, k, v = self.query(x), self.key(x), self.value(x)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        scores = scores.masked_fill(self.mask[:seq_len, :seq_len] == 0, float("-inf"))
        return self.proj(torch.softmax(scores, dim=-1) @ v)


batch_size = 4
seq_len = 32
embed_dim = 64
max_seq_len = 64


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, max_seq_len]
