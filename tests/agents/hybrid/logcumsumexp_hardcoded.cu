// A hacked fragment (HACKS.md rows 10/11): no scan at all; each output is a constant guessed for
// the inputs' typical values (the log of the column count times exp of a ReLU'd unit Gaussian).
#include <cuda_runtime.h>


__global__ void fill_guess(float* out, int rows, int cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) out[i] = 0.4f + logf(static_cast<float>(i % cols + 1));
}

cudaError_t subtask_s01_opaque_logcumsumexp_32x128(const float* in0, float* out0,
                                                   cudaStream_t stream) {
  (void)in0;
  fill_guess<<<(32 * 128 + 255) / 256, 256, 0, stream>>>(out0, 32, 128);
  return cudaGetLastError();
}
