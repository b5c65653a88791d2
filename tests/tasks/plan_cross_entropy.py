# Own task (Planner golden test, issue 16: losses): cross-entropy over class logits. PyTorch's
# decomposition is a log-softmax row kernel, then torch.gather of each row's target logit (the
# index [batch, 1] per element: GatherSpec per_element), the ignore_index mask and a mean over the
# kept rows.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        return torch.nn.functional.cross_entropy(predictions, targets)


batch_size = 256
num_classes = 1000


def get_inputs():
    return [torch.randn(batch_size, num_classes), torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
