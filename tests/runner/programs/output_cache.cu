// Adversarial (HACKS.md rows 5/6): results cached by input pointer. The first call on a buffer
// computes; later calls on the same buffer copy the cached result, whatever the buffer now holds.
// Expected: finding output_cache (a timed iteration re-run on fresh buffers disagrees).
#include <map>

#include "adversarial_common.h"

namespace {
std::map<const void*, float*> cache;
}

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  std::string* error_sink = &state->error;
  size_t bytes = static_cast<size_t>(adversarial::count_of(outputs[0])) * sizeof(float);
  auto found = cache.find(inputs[0].data);
  if (found != cache.end()) {
    STITCH_CUDA_CHECK(
        cudaMemcpyAsync(outputs[0].data, found->second, bytes, cudaMemcpyDeviceToDevice, stream));
    return STITCH_OK;
  }
  int status = adversarial::launch_compute(state, inputs[0], outputs[0], stream);
  if (status != STITCH_OK) return status;
  float* copy = nullptr;
  STITCH_CUDA_CHECK(cudaMalloc(&copy, bytes));
  STITCH_CUDA_CHECK(
      cudaMemcpyAsync(copy, outputs[0].data, bytes, cudaMemcpyDeviceToDevice, stream));
  cache[inputs[0].data] = copy;
  return STITCH_OK;
}
