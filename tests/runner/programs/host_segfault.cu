// Bad input: the host side of forward dereferences a null pointer. Expected: the runner process dies
// with SIGSEGV, the outcome is runtime_error, no process is left behind and the GPU stays usable.
#include "adversarial_common.h"

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor*, stitch_tensor*, cudaStream_t) {
  volatile int* nowhere = nullptr;
  *nowhere = 42;
  return state->error.empty() ? STITCH_OK : STITCH_ERROR_INTERNAL;
}
