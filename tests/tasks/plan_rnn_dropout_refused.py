# Own task (Planner golden, issue 16): a two-layer ReLU Elman RNN with dropout 0.25 between the
# layers, in KernelBench's training mode: the built-in Coder refuses it by name (random masks
# between layers; cuDNN's RNN runs in inference mode here).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.rnn = nn.RNN(input_size, hidden_size, num_layers=2, nonlinearity="relu", dropout=0.25)

    def forward(self, x):
        y, _ = self.rnn(x)
        return y


def get_inputs():
    return [torch.randn(5, 2, 4)]


def get_init_inputs():
    return [4, 8]
