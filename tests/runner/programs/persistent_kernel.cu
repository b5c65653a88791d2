// Adversarial (HACKS.md row 22): init leaves a kernel running on a stream of its own, polling
// device memory for work (here: forever). Expected: the device never becomes idle after init:
// status timeout with finding persistent_kernel.
#include "adversarial_common.h"

namespace {
__global__ void poll_forever(volatile int* flag) {
  while (*flag == 0) {
  }
}
}  // namespace

int program_init_hook(adversarial::State* state) {
  std::string* error_sink = &state->error;
  int* flag = nullptr;
  STITCH_CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
  STITCH_CUDA_CHECK(cudaMemset(flag, 0, sizeof(int)));
  STITCH_CUDA_CHECK(cudaStreamCreateWithFlags(&state->side, cudaStreamNonBlocking));
  poll_forever<<<1, 1, 0, state->side>>>(flag);
  STITCH_LAUNCH_CHECK();
  state->extra = flag;
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  return adversarial::launch_compute(state, inputs[0], outputs[0], stream);
}
