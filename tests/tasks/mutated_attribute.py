# Own task: forward overwrites a plain tensor attribute in place (like KernelBench 33_VanillaRNN),
# which torch.export refuses unless capture registers the attribute as a buffer.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, batch_size, features):
        super().__init__()
        self.state = torch.randn(batch_size, features)
        self.fc = nn.Linear(2 * features, features)

    def forward(self, x, initial_state):
        self.state.copy_(initial_state)
        self.state = torch.tanh(self.fc(torch.cat((x, self.state), dim=1)))
        return self.state


batch_size = 8
features = 16


def get_inputs():
    return [torch.randn(batch_size, features), torch.randn(batch_size, features)]


def get_init_inputs():
    return [batch_size, features]
