# Honest ModelNew for relu_task.py with its own CUDA kernel, built by load_inline (GPU only).
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

__global__ void relu_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

torch::Tensor relu_cuda(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long n = x.numel();
  int threads = 256;
  long blocks = (n + threads - 1) / threads;
  relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
cpp_source = "torch::Tensor relu_cuda(torch::Tensor x);"

relu_ext = load_inline(name="kb_test_relu_cuda", cpp_sources=cpp_source, cuda_sources=cuda_source,
                       functions=["relu_cuda"], verbose=False,
                       extra_cuda_cflags=["-O2"], extra_include_paths=[])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return relu_ext.relu_cuda(x.contiguous())
