// Near-miss for row 12: plain FP32 cuBLAS. y = relu(x @ diag(scale) + shift) with cublasGemmEx in
// CUDA_R_32F / CUBLAS_COMPUTE_32F and the default math mode (no TF32). Allowed on the fp32 track.
#include <cublas_v2.h>

#include "adversarial_common.h"

namespace {

struct Gemm {
  cublasHandle_t handle = nullptr;
  float* diagonal = nullptr;
};

__global__ void fill_diagonal(float* d, const float* scale, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n * n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    d[i] = (i / n == i % n) ? scale[i % n] : 0.0f;
}

__global__ void add_shift_relu(float* y, const float* shift, int64_t count, int64_t features) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = y[i] + shift[i % features];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state_out) {
  adversarial::State* state = nullptr;
  int status = adversarial::create_state(params, n_params, &state);
  if (status != STITCH_OK) return status;
  auto* gemm = new Gemm;
  const int64_t n = state->features;
  if (cublasCreate(&gemm->handle) != CUBLAS_STATUS_SUCCESS ||
      cublasSetMathMode(gemm->handle, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&gemm->diagonal, static_cast<size_t>(n * n) * sizeof(float)) != cudaSuccess)
    return STITCH_ERROR_LIBRARY;
  fill_diagonal<<<1024, 256, 0, nullptr>>>(gemm->diagonal, state->scale, n);
  state->extra = gemm;
  *state_out = state;
  return cudaDeviceSynchronize() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}

extern "C" int stitch_forward(void* state_ptr, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  auto* state = static_cast<adversarial::State*>(state_ptr);
  auto* gemm = static_cast<Gemm*>(state->extra);
  const int rows = static_cast<int>(inputs[0].shape[0]);
  const int n = static_cast<int>(state->features);
  const float one = 1.0f, zero = 0.0f;
  cublasSetStream(gemm->handle, static_cast<cudaStream_t>(stream));
  if (cublasGemmEx(gemm->handle, CUBLAS_OP_N, CUBLAS_OP_N, n, rows, n, &one, gemm->diagonal,
                   CUDA_R_32F, n, inputs[0].data, CUDA_R_32F, n, &zero, outputs[0].data, CUDA_R_32F,
                   n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
    return STITCH_ERROR_LIBRARY;
  add_shift_relu<<<4096, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<float*>(outputs[0].data), state->shift, int64_t{rows} * n, n);
  return cudaGetLastError() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}
