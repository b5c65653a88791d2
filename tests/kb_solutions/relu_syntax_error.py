# ModelNew for relu_task.py that does not even import: must be reported as compile_error.
import torch.nn as nn


class ModelNew(nn.Module)
    pass
