# Own task (Planner golden, issue 16): a one-layer sequence-major LSTM without biases whose
# initial states are inputs, returning its final cell state c_n (y stored to scratch, h_n not
# computed).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, bias=False)

    def forward(self, x, h0, c0):
        _, (_, c_n) = self.lstm(x, (h0, c0))
        return c_n


def get_inputs():
    return [torch.randn(7, 2, 6), torch.randn(1, 2, 20), torch.randn(1, 2, 20)]


def get_init_inputs():
    return [6, 20]
