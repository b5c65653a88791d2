// Shared part of the runner's test programs (tests/runner/programs/*.cu): every one computes
// y = relu(x * scale + shift) for the runner's built-in --self-test spec (params scale, shift [F];
// input x [rows, F]; output y like x), honestly or with one planted hack. This header defines the
// ABI's extern "C" functions; each program defines program_init_hook and program_forward.
// One translation unit per program (.so), so the definitions here are not duplicated.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "program_support.h"

namespace adversarial {

struct State {
  float* scale = nullptr;
  float* shift = nullptr;
  int64_t features = 0;
  std::string error;
  cudaStream_t side = nullptr;  // programs that use a stream of their own
  void* extra = nullptr;        // program-specific
};

__global__ void scale_shift_relu_kernel(const float* __restrict__ x, const float* scale,
                                        const float* shift, float* y, int64_t count,
                                        int64_t features, int64_t extra_writes) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count + extra_writes; i += stride) {
    float v = i < count ? x[i] : 0.0f;
    int64_t column = i % features;
    float r = __fadd_rn(__fmul_rn(v, scale[column]), shift[column]);
    y[i] = r < 0.0f ? 0.0f : r;  // past `count`: the planted out-of-bounds write
  }
}

inline int64_t count_of(const stitch_tensor& t) {
  return stitch_program::element_count(t);
}

// Launches the honest computation (plus `extra_writes` elements past the end of y).
inline int launch_compute(State* state, const stitch_tensor& x, stitch_tensor& y,
                          cudaStream_t stream, int64_t extra_writes = 0) {
  std::string* error_sink = &state->error;
  int64_t count = count_of(x);
  scale_shift_relu_kernel<<<1024, 256, 0, stream>>>(static_cast<const float*>(x.data), state->scale,
                                                    state->shift, static_cast<float*>(y.data),
                                                    count, state->features, extra_writes);
  STITCH_LAUNCH_CHECK();
  return STITCH_OK;
}

}  // namespace adversarial

// Defined by each program.
int program_init_hook(adversarial::State* state);
int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream);

#ifndef ADVERSARIAL_ABI_VERSION
#define ADVERSARIAL_ABI_VERSION STITCH_ABI_VERSION
#endif

extern "C" {

int stitch_abi_version(void) {
  return ADVERSARIAL_ABI_VERSION;
}

int stitch_init(const stitch_tensor* params, int n_params, void** state_out) {
  std::string* error_sink = &stitch_program::init_error();
  if (n_params != 2)
    return stitch_program::fail(error_sink, STITCH_ERROR_INVALID_ARGUMENT, "expected 2 params");
  auto* state = new adversarial::State;
  state->features = params[0].shape[0];
  int status = stitch_program::copy_to_owned(error_sink, params[0], &state->scale);
  if (status == STITCH_OK)
    status = stitch_program::copy_to_owned(error_sink, params[1], &state->shift);
  if (status == STITCH_OK) status = program_init_hook(state);
  if (status != STITCH_OK) {
    if (!state->error.empty()) *error_sink = state->error;
    delete state;
    return status;
  }
  *state_out = state;
  return STITCH_OK;
}

int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs, stitch_tensor* outputs,
                   int n_outputs, void* stream) {
  auto* s = static_cast<adversarial::State*>(state);
  if (n_inputs != 1 || n_outputs != 1)
    return stitch_program::fail(&s->error, STITCH_ERROR_INVALID_ARGUMENT, "expected 1 in, 1 out");
  return program_forward(s, inputs, outputs, static_cast<cudaStream_t>(stream));
}

void stitch_destroy(void* state) {
  auto* s = static_cast<adversarial::State*>(state);
  if (!s) return;
  cudaFree(s->scale);
  cudaFree(s->shift);
  delete s;
}

const char* stitch_last_error(void* state) {
  if (!state) return stitch_program::init_error().c_str();
  return static_cast<adversarial::State*>(state)->error.c_str();
}

}  // extern "C"
