// Adversarial (HACKS.md row 2): the work runs on a stream of the program's own that is never
// joined into the caller's stream, after a delay, so the caller's stream looks finished at once.
// Expected: a fatal side_stream finding (outputs written after the caller's stream completed).
#include "adversarial_common.h"

namespace {
__global__ void delay_kernel(long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
}  // namespace

int program_init_hook(adversarial::State* state) {
  std::string* error_sink = &state->error;
  STITCH_CUDA_CHECK(cudaStreamCreateWithFlags(&state->side, cudaStreamNonBlocking));
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t) {
  delay_kernel<<<1, 1, 0, state->side>>>(40'000'000);  // ~20 ms at 2 GHz
  return adversarial::launch_compute(state, inputs[0], outputs[0], state->side);
}
