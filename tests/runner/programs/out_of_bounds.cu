// Adversarial (HACKS.md row 24): correct output, plus 64 elements written past its end (into
// whatever neighbours the buffer). Expected: finding guard_band.
#include "adversarial_common.h"

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  return adversarial::launch_compute(state, inputs[0], outputs[0], stream, /*extra_writes=*/64);
}
