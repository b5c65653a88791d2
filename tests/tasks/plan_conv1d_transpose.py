# Own task (Planner golden test, conv family): 1-d convolutions — a strided Conv1d with a bias,
# then a ConvTranspose1d without one (stride 2, output_padding 1) and a tanh epilogue.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels, hidden):
        super().__init__()
        self.down = nn.Conv1d(channels, hidden, 5, stride=2, padding=2)
        self.up = nn.ConvTranspose1d(hidden, channels, 3, stride=2, padding=1, output_padding=1,
                                     bias=False)

    def forward(self, x):
        return torch.tanh(self.up(self.down(x)))


batch_size = 2
channels = 4
hidden = 8
length = 32


def get_inputs():
    return [torch.randn(batch_size, channels, length)]


def get_init_inputs():
    return [channels, hidden]
