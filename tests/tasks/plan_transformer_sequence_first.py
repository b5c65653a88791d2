# Own task: nn.TransformerEncoderLayer with the default sequence-first layout ([seq, batch, embed],
# as nn.TransformerEncoder in ViT-style models uses it), training mode (the decomposed path). The
# attention output goes to the out-projection as [seq·batch, embed] rows with no permute back: the
# attention kernel writes those rows itself (copy folding), the MLP's ReLU rides the GEMM.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_model, nhead, dim_feedforward):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0)

    def forward(self, x):
        return self.layer(x)


sequence_length = 40
batch_size = 3
d_model = 64
nhead = 4
dim_feedforward = 128


def get_inputs():
    return [torch.randn(sequence_length, batch_size, d_model)]


def get_init_inputs():
    return [d_model, nhead, dim_feedforward]
