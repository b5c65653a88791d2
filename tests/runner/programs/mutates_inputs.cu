// Adversarial (HACKS.md row 9): computes the right answer, then overwrites its input (which would
// corrupt a reference computed afterwards from the same buffer). Expected: finding mutates_inputs.
#include "adversarial_common.h"

namespace {
__global__ void clobber(float* x, int64_t count) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    x[i] = 0.0f;
}
}  // namespace

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  int status = adversarial::launch_compute(state, inputs[0], outputs[0], stream);
  if (status != STITCH_OK) return status;
  clobber<<<64, 256, 0, stream>>>(static_cast<float*>(inputs[0].data), 1024);
  return STITCH_OK;
}
