// Adversarial (HACKS.md row 7, stale output): forward returns success without writing the output,
// hoping an earlier correct result is still in the buffer. Expected: finding stale_output.
#include "adversarial_common.h"

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State*, const stitch_tensor*, stitch_tensor*, cudaStream_t) {
  return STITCH_OK;
}
