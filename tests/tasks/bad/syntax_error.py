# Bad task: not valid Python (capture: load_failed, exit 1).
import torch

def get_inputs(:
    return [torch.randn(4)]
