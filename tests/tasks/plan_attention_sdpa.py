# Own task: multi-head attention through F.scaled_dot_product_attention (kept whole by capture):
# one causal call with the default scale, head dim 80, sequence length 45.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        batch, seq, embed = x.shape
        q, k, v = self.qkv(x).split(embed, dim=2)
        shape = (batch, seq, self.num_heads, embed // self.num_heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(batch, seq, embed))


batch_size = 2
seq_len = 45
embed_dim = 160
num_heads = 2


def get_inputs():
    return [torch.randn(batch_size, seq_len, embed_dim)]


def get_init_inputs():
    return [embed_dim, num_heads]
