// Bad input: asks for 200 GiB at init (more than any GPU has). Expected: cudaMalloc fails, the
// program reports it from stitch_init, the outcome is runtime_error naming the allocation, and the
// GPU is usable for the next attempt.
#include "adversarial_common.h"

int program_init_hook(adversarial::State* state) {
  void* huge = nullptr;
  cudaError_t status = cudaMalloc(&huge, size_t{200} << 30);
  if (status != cudaSuccess) {
    cudaGetLastError();
    return stitch_program::fail(&state->error, STITCH_ERROR_OUT_OF_MEMORY,
                                (std::string("cudaMalloc(200 GiB): ") + cudaGetErrorString(status)).c_str());
  }
  state->extra = huge;  // never reached on a real GPU
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  return adversarial::launch_compute(state, inputs[0], outputs[0], stream);
}
