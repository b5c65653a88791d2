// HACKS.md row 14: pins the params and the input in persisting L2 so they survive the runner's
// flush; resets the persisting lines only at destroy, after timing.
#include "adversarial_common.h"

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 32 << 20);
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  cudaStreamAttrValue attribute{};
  attribute.accessPolicyWindow.base_ptr = inputs[0].data;
  attribute.accessPolicyWindow.num_bytes =
      static_cast<size_t>(adversarial::element_count(inputs[0])) * sizeof(float);
  attribute.accessPolicyWindow.hitRatio = 1.0f;
  attribute.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  attribute.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  cudaStreamSetAttribute(static_cast<cudaStream_t>(stream), cudaStreamAttributeAccessPolicyWindow,
                         &attribute);
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}

extern "C" void stitch_program_release_l2() {
  cudaCtxResetPersistingL2Cache();
}
