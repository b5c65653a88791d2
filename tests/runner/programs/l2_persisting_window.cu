// Near-miss (HACKS.md row 14): computes honestly, but raises the persisting-L2 limit and marks its
// input as persisting, hoping lines survive the runner's flush between timed calls. The runner
// resets both before every call, so this earns nothing. Expected: status ok, a non-fatal
// l2_persistence finding, no fatal one.
#include "adversarial_common.h"

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  std::string* error_sink = &state->error;
  STITCH_CUDA_CHECK(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 16 << 20));
  cudaStreamAttrValue window{};
  window.accessPolicyWindow.base_ptr = inputs[0].data;
  window.accessPolicyWindow.num_bytes = 16 << 20;
  window.accessPolicyWindow.hitRatio = 1.0f;
  window.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  window.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  STITCH_CUDA_CHECK(cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &window));
  return adversarial::launch_compute(state, inputs[0], outputs[0], stream);
}
