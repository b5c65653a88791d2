// y = relu(x * scale + shift), scale and shift per column (the last dimension of x).
#include "stitch/program.h"

struct State { float* scale; float* shift; long n; };

__global__ void scale_shift_relu(const float* x, const float* scale, const float* shift, float* y, long count, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count) return;
  float v = __fadd_rn(__fmul_rn(x[i], scale[i % n]), shift[i % n]);
  y[i] = v;
}

extern "C" int stitch_abi_version(void) { return STITCH_ABI_VERSION; }

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  if (n_params != 2) return STITCH_ERROR_INVALID_ARGUMENT;
  State* s = new State;
  s->n = params[0].shape[0];
  cudaMalloc(&s->scale, s->n * sizeof(float));
  cudaMalloc(&s->shift, s->n * sizeof(float));
  cudaMemcpy(s->scale, params[0].data, s->n * sizeof(float), cudaMemcpyDeviceToDevice);
  cudaMemcpy(s->shift, params[1].data, s->n * sizeof(float), cudaMemcpyDeviceToDevice);
  *state = s;
  return cudaGetLastError() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs, stitch_tensor* outputs, int n_outputs, void* stream) {
  State* s = (State*)state;
  long count = 1;
  for (int d = 0; d < inputs[0].rank; ++d) count *= inputs[0].shape[d];
  scale_shift_relu<<<(count + 255) / 256, 256, 0, (cudaStream_t)stream>>>((const float*)inputs[0].data, s->scale, s->shift, (float*)outputs[0].data, count, s->n);
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
