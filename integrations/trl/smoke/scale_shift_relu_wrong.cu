// scale_shift_relu: y = relu(x * scale + shift), scale and shift per column.
#include <cuda_runtime.h>
#include <stdint.h>

#include "stitch/program.h"

struct State {
  float* scale;
  float* shift;
  int64_t features;
};

__global__ void scale_shift_relu(const float* x, const float* scale, const float* shift, float* y,
                                 int64_t count, int64_t features) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float v = __fadd_rn(__fmul_rn(x[i], scale[i % features]), shift[i % features]);
  y[i] = v;
}

extern "C" int stitch_abi_version(void) { return STITCH_ABI_VERSION; }

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  if (n_params != 2 || params[0].rank != 1) return STITCH_ERROR_INVALID_ARGUMENT;
  State* s = new State;
  s->features = params[0].shape[0];
  size_t bytes = s->features * sizeof(float);
  cudaMalloc(&s->scale, bytes);
  cudaMalloc(&s->shift, bytes);
  cudaMemcpy(s->scale, params[0].data, bytes, cudaMemcpyDeviceToDevice);
  cudaMemcpy(s->shift, params[1].data, bytes, cudaMemcpyDeviceToDevice);
  *state = s;
  return cudaGetLastError() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  State* s = (State*)state;
  int64_t count = 1;
  for (int d = 0; d < inputs[0].rank; ++d) count *= inputs[0].shape[d];
  int blocks = (int)((count + 255) / 256);
  scale_shift_relu<<<blocks, 256, 0, (cudaStream_t)stream>>>(
      (const float*)inputs[0].data, s->scale, s->shift, (float*)outputs[0].data, count, s->features);
  return cudaGetLastError() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}

extern "C" void stitch_destroy(void* state) {
  State* s = (State*)state;
  if (s == nullptr) return;
  cudaFree(s->scale);
  cudaFree(s->shift);
  delete s;
}

extern "C" const char* stitch_last_error(void* state) { return "a CUDA call failed"; }
