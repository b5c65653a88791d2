// Broken: forward reports an error. Expected: status forward_failed with the program's text.
#include "adversarial_common.h"

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor*, stitch_tensor*, cudaStream_t) {
  return stitch_program::fail(&state->error, STITCH_ERROR_INTERNAL, "planted failure 42");
}
