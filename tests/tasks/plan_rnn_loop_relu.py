# Own task (Planner golden, issue 16): a Python-loop RNN cell with ReLU and a bias-free Linear,
# returning every hidden state stacked. Pass "recurrences" makes it one cuDNN RNN_RELU layer
# without biases whose output is the stack.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.cell = nn.Linear(input_size + hidden_size, hidden_size, bias=False)

    def forward(self, x, h0):
        h = h0
        states = []
        for t in range(x.size(0)):
            h = torch.relu(self.cell(torch.cat((x[t], h), dim=1)))
            states.append(h)
        return torch.stack(states)


def get_inputs():
    return [torch.randn(5, 2, 3), torch.randn(2, 4)]


def get_init_inputs():
    return [3, 4]
