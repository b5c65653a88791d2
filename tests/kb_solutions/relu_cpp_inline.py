# Honest ModelNew for relu_task.py with its own C++ loop, built by load_inline (CPU device). The
# extension's torch::empty_like goes through the dispatcher and must be allowed; the loop is ours.
# relu_cpp_calls_aten.py builds the same extension (same source, one build) and calls at::relu.
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
        return relu_ext.relu_loop(x.contiguous())
