// Broken: built against another ABI version. Expected: status abi_mismatch.
#define ADVERSARIAL_ABI_VERSION 99
#include "adversarial_common.h"

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  return adversarial::launch_compute(state, inputs[0], outputs[0], stream);
}
