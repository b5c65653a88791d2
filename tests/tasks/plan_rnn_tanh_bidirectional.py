# Own task (Planner golden, issue 16): a bidirectional two-layer Elman RNN (tanh), sequence-major,
# zero initial state (PyTorch makes it), returning the output sequence plus a residual of a Linear
# of the input: the recurrent subtask's y feeds an elementwise add.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.rnn = nn.RNN(input_size, hidden_size, num_layers=2, bidirectional=True)
        self.skip = nn.Linear(input_size, 2 * hidden_size)

    def forward(self, x):
        y, _ = self.rnn(x)
        return y + self.skip(x)


def get_inputs():
    return [torch.randn(9, 4, 8)]


def get_init_inputs():
    return [8, 12]
