// HACKS.md row 12: rounds the operands to TF32 in inline PTX (cvt.rna.tf32.f32) and multiplies
// once: plain TF32, not split. Fatal on the fp32 track even though it is hidden in an asm string.
#include "adversarial_common.h"

namespace {

__device__ __forceinline__ float round_tf32(float v) {
  uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(v));
  return __uint_as_float(bits);
}

__global__ void scale_shift_relu_tf32(const float* x, const float* scale, const float* shift,
                                      float* y, int64_t count, int64_t features) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = round_tf32(x[i]) * round_tf32(scale[i % features]) + shift[i % features];
    y[i] = v < 0.0f ? 0.0f : v;
  }
}

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state_ptr, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  auto* state = static_cast<adversarial::State*>(state_ptr);
  scale_shift_relu_tf32<<<4096, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), state->scale, state->shift,
      static_cast<float*>(outputs[0].data), adversarial::element_count(inputs[0]), state->features);
  return cudaGetLastError() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}
