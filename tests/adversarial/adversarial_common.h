// The honest part shared by the adversarial suite (manifest.json): state, the scale_shift_relu
// kernel for tests/tasks/scale_shift_relu.py (y = relu(x * scale + shift), params [scale, shift],
// input x [rows, features]) and the ABI exports other than stitch_init / stitch_forward, which each
// program writes with its hack. Scanned with every program: it must raise no finding of its own.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "stitch/program.h"

namespace adversarial {

struct State {
  float* scale = nullptr;
  float* shift = nullptr;
  int64_t features = 0;
  std::string error;
  void* extra = nullptr;  // whatever a program keeps besides
};

inline std::string& init_error() {
  static thread_local std::string text;
  return text;
}

__global__ void scale_shift_relu_kernel(const float* __restrict__ x,
                                        const float* __restrict__ scale,
                                        const float* __restrict__ shift, float* __restrict__ y,
                                        int64_t count, int64_t features) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = __fadd_rn(__fmul_rn(x[i], scale[i % features]), shift[i % features]);
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

inline int64_t element_count(const stitch_tensor& t) {
  int64_t count = 1;
  for (int i = 0; i < t.rank; ++i)
    count *= t.shape[i];
  return count;
}

// Copies scale and shift into buffers the state owns.
inline int create_state(const stitch_tensor* params, int n_params, State** out) {
  if (n_params != 2 || params == nullptr || out == nullptr || params[0].rank != 1) {
    init_error() = "expected params [scale, shift]";
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  State* state = new State;
  state->features = params[0].shape[0];
  const size_t bytes = static_cast<size_t>(state->features) * sizeof(float);
  if (cudaMalloc(&state->scale, bytes) != cudaSuccess ||
      cudaMalloc(&state->shift, bytes) != cudaSuccess ||
      cudaMemcpy(state->scale, params[0].data, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess ||
      cudaMemcpy(state->shift, params[1].data, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess) {
    init_error() = cudaGetErrorString(cudaGetLastError());
    cudaFree(state->scale);
    cudaFree(state->shift);
    delete state;
    return STITCH_ERROR_CUDA;
  }
  *out = state;
  return STITCH_OK;
}

inline int launch_scale_shift_relu(State* state, const stitch_tensor& x, stitch_tensor& y,
                                   cudaStream_t stream) {
  const int64_t count = element_count(x);
  if (count == 0) return STITCH_OK;
  const int threads = 256;
  const int64_t blocks = (count + threads - 1) / threads;
  scale_shift_relu_kernel<<<static_cast<unsigned>(blocks < 4096 ? blocks : 4096), threads, 0,
                            stream>>>(static_cast<const float*>(x.data), state->scale, state->shift,
                                      static_cast<float*>(y.data), count, state->features);
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) {
    state->error = cudaGetErrorString(status);
    return STITCH_ERROR_CUDA;
  }
  return STITCH_OK;
}

}  // namespace adversarial

extern "C" {

int stitch_abi_version(void) {
  return STITCH_ABI_VERSION;
}

void stitch_destroy(void* state_ptr) {
  auto* state = static_cast<adversarial::State*>(state_ptr);
  if (state == nullptr) return;
  cudaFree(state->scale);
  cudaFree(state->shift);
  delete state;
}

const char* stitch_last_error(void* state) {
  return state == nullptr ? adversarial::init_error().c_str()
                          : static_cast<adversarial::State*>(state)->error.c_str();
}

}  // extern "C"
