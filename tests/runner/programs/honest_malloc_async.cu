// Honest near-miss: a workspace allocated with cudaMallocAsync and freed with cudaFreeAsync on the
// caller's stream in every call (stream-ordered memory, possibly reused between calls). Two
// kernels: t = x * scale into the workspace, then y = relu(t + shift). Expected: status ok, no
// fatal finding, two launches per forward.
#include "adversarial_common.h"

namespace {
__global__ void scale_into(const float* x, const float* scale, float* t, int64_t count,
                           int64_t features) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    t[i] = __fmul_rn(x[i], scale[i % features]);
}
__global__ void shift_relu(const float* t, const float* shift, float* y, int64_t count,
                           int64_t features) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float r = __fadd_rn(t[i], shift[i % features]);
    y[i] = r < 0.0f ? 0.0f : r;
  }
}
}  // namespace

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  std::string* error_sink = &state->error;
  int64_t count = adversarial::count_of(inputs[0]);
  float* workspace = nullptr;
  STITCH_CUDA_CHECK(cudaMallocAsync(&workspace, count * sizeof(float), stream));
  scale_into<<<1024, 256, 0, stream>>>(static_cast<const float*>(inputs[0].data), state->scale,
                                       workspace, count, state->features);
  STITCH_LAUNCH_CHECK();
  shift_relu<<<1024, 256, 0, stream>>>(
      workspace, state->shift, static_cast<float*>(outputs[0].data), count, state->features);
  STITCH_LAUNCH_CHECK();
  STITCH_CUDA_CHECK(cudaFreeAsync(workspace, stream));
  return STITCH_OK;
}
