# Own task (Planner golden, issue 16): a two-layer batch_first GRU whose initial state is an input,
# returning h_n (the output sequence unused): one recurrent subtask storing y and h_n, h_n straight
# into the caller's output, then a tanh of it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, batch_first=True)

    def forward(self, x, h0):
        _, h_n = self.gru(x, h0)
        return torch.tanh(h_n)


def get_inputs():
    return [torch.randn(3, 12, 10), torch.randn(2, 3, 16)]


def get_init_inputs():
    return [10, 16, 2]
