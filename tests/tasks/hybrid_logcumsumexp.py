# Own task (hybrid Coder acceptance, issue 14): a linear layer and a ReLU the built-in Coder
# covers, a log-cumulative-sum-exp (a scan outside its cumsum / cumprod) it refuses, then a scale
# and tanh it covers again. With `--coder hybrid` the Planner keeps the logcumsumexp as an opaque
# subtask that an LLM writes.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.relu(self.linear(x))
        y = torch.logcumsumexp(y, dim=1)
        return torch.tanh(y * 0.05)


batch_size = 32
in_features = 64
out_features = 128


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
