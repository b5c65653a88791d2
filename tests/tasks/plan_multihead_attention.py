# Own task: nn.MultiheadAttention self-attention (batch_first, packed in-projection, need_weights
# left at its default, so PyTorch takes its explicit bmm / softmax / bmm path with Q pre-scaled);
# only the attention output is returned, so the averaged weights are dead code.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.attention = nn.MultiheadAttention(embed_dim, num_heads, batch_first=True)

    def forward(self, x):
        out, _ = self.attention(x, x, x)
        return out


batch_size = 4
sequence_length = 96
embed_dim = 128
num_heads = 8


def get_inputs():
    return [torch.randn(batch_size, sequence_length, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads]
