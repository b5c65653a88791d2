# Own task (capture test): Mish is kept whole at capture (python/stitch_harness/export_graph.py's
# KEPT_WHOLE), one node the generated code computes in one exponential (op_mish), where core
# ATen's decomposition makes six per element (an exp, a log1p, a comparison, a where, a tanh and a
# mul); a softplus beside it still decomposes. Inputs spread past softplus's threshold of 20.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        return F.mish(x) + F.softplus(x)


batch_size = 4
features = 1000


def get_inputs():
    return [torch.randn(batch_size, features) * 8]


def get_init_inputs():
    return []
