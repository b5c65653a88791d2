# Own task: forward draws noise with torch.randn and adds it to a Linear's output, so the result
# depends on a random op inside forward (capture turns it into an input of kind `random`).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        noise = torch.randn(x.size(0), self.fc.out_features)
        return self.fc(x) + 0.1 * noise


batch_size = 16
in_features = 32
out_features = 24


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
