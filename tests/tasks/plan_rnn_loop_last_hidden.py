# Own task (Planner golden, issue 16): a batch-first Python-loop RNN cell that puts the state first
# in its cat, starts from zeros and returns only the last hidden state. Pass "recurrences" makes it
# one batch-first cuDNN RNN layer whose h_n is the output.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.hidden_size = hidden_size
        self.cell = nn.Linear(hidden_size + input_size, hidden_size)

    def forward(self, x):
        h = torch.zeros(x.size(0), self.hidden_size, device=x.device)
        for t in range(x.size(1)):
            h = torch.tanh(self.cell(torch.cat([h, x[:, t]], dim=1)))
        return h


def get_inputs():
    return [torch.randn(3, 7, 5)]


def get_init_inputs():
    return [5, 6]
