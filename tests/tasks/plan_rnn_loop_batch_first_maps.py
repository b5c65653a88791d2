# Own task (Planner golden, issue 16): a batch-first Python-loop RNN cell over steps 1..T-1 only,
# with two per-step maps of the state: sigmoid(h2o(h)) stacked (one GEMM + sigmoid over all steps'
# states after pass "recurrences") and an addmm whose bias has one row per batch element (not
# row-wise over steps: kept per step), plus the last hidden state.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, batch):
        super().__init__()
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.row_bias = nn.Parameter(torch.randn(batch, output_size))

    def forward(self, x, h0):
        h = h0
        mapped, per_row = [], []
        for t in range(1, x.size(1)):
            h = torch.tanh(self.i2h(torch.cat((x[:, t], h), dim=1)))
            mapped.append(torch.sigmoid(self.h2o(h)))
            per_row.append(torch.addmm(self.row_bias, h, self.h2o.weight.t()))
        return torch.stack(mapped, dim=0), torch.cat(per_row, 0), h


def get_inputs():
    return [torch.rand(2, 6, 5), torch.rand(2, 4)]


def get_init_inputs():
    return [5, 4, 3, 2]
