# Own task (Planner golden, issue 16): a vanilla RNN written as a Python loop (KernelBench level 3's
# VanillaRNNHidden shape, small): cat(x[t], h) → Linear → tanh per step, a second Linear of every
# hidden state, outputs stacked. Captured unrolled; pass "recurrences" makes it one cuDNN RNN
# layer and one GEMM over all steps' hidden states.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, x, h0):
        hidden = h0
        outputs = []
        for t in range(x.size(0)):
            hidden = torch.tanh(self.i2h(torch.cat((x[t], hidden), dim=1)))
            outputs.append(self.h2o(hidden))
        return torch.stack(outputs, dim=0)


def get_inputs():
    return [torch.rand(6, 3, 5), torch.rand(3, 4)]


def get_init_inputs():
    return [5, 4, 3]
