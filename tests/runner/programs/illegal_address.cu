// Broken: a kernel writes through a wild pointer. Expected: status cuda_error (illegal address),
// exit code 1.
#include "adversarial_common.h"

namespace {
__global__ void write_wild(float* target) {
  *target = 1.0f;
}
}  // namespace

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State*, const stitch_tensor*, stitch_tensor*,
                    cudaStream_t stream) {
  write_wild<<<1, 1, 0, stream>>>(reinterpret_cast<float*>(0x10));
  return STITCH_OK;
}
