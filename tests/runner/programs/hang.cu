// Adversarial / broken: forward launches a kernel that never ends. Expected: status timeout (the
// runner's own watchdog), exit code 5.
#include "adversarial_common.h"

namespace {
__global__ void spin(volatile int* never_set) {
  while (*never_set == 0) {
  }
}
}  // namespace

int program_init_hook(adversarial::State* state) {
  std::string* error_sink = &state->error;
  int* flag = nullptr;
  STITCH_CUDA_CHECK(cudaMalloc(&flag, sizeof(int)));
  STITCH_CUDA_CHECK(cudaMemset(flag, 0, sizeof(int)));
  state->extra = flag;
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor*, stitch_tensor*,
                    cudaStream_t stream) {
  spin<<<1, 1, 0, stream>>>(static_cast<volatile int*>(state->extra));
  return STITCH_OK;
}
