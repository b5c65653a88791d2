# Own task: nn.TransformerEncoderLayer (post-norm, ReLU feed-forward, dropout 0, batch_first) as
# KernelBench builds it: in training mode, so PyTorch runs the decomposed path (multi-head
# attention through scaled_dot_product_attention, residual adds, layer norms, the MLP).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0,
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x)


batch_size = 4
sequence_length = 96
d_model = 128
nhead = 8
dim_feedforward = 256


def get_inputs():
    return [torch.randn(batch_size, sequence_length, d_model)]


def get_init_inputs():
    return [d_model, nhead, dim_feedforward]
