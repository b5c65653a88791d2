// Near-miss baseline: the honest program every adversarial one starts from. No finding at all.
#include "adversarial_common.h"

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  if (n_inputs != 1 || n_outputs != 1) return STITCH_ERROR_INVALID_ARGUMENT;
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}
