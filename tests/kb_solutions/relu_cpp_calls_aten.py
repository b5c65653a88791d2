# Adversarial ModelNew for relu_task.py: the "custom" C++ extension just calls at::relu (HACKS row 1).
# The call reaches the dispatcher from C++, where the guard must see it as aten.relu.
# Same source as relu_cpp_inline.py, so the two share one build.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor relu_loop(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const float* in = x.data_ptr<float>();
  float* out = y.data_ptr<float>();
  for (int64_t i = 0, n = x.numel(); i < n; ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
  return y;
}

torch::Tensor relu_aten(torch::Tensor x) { return at::relu(x); }
"""

relu_ext = load_inline(name="kb_test_relu_cpu", cpp_sources=cpp_source,
                       functions=["relu_loop", "relu_aten"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_aten(x.contiguous())
