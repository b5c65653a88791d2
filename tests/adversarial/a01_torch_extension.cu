// HACKS.md row 1: the forward calls PyTorch instead of computing. Does not build (the program ABI
// gives no torch include path); the source check must still reject it.
#include <torch/extension.h>

#include "adversarial_common.h"

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state_ptr, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  auto* state = static_cast<adversarial::State*>(state_ptr);
  auto options = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
  at::Tensor x =
      torch::from_blob(inputs[0].data, {inputs[0].shape[0], inputs[0].shape[1]}, options);
  at::Tensor scale = torch::from_blob(state->scale, {state->features}, options);
  at::Tensor shift = torch::from_blob(state->shift, {state->features}, options);
  at::Tensor y =
      torch::from_blob(outputs[0].data, {outputs[0].shape[0], outputs[0].shape[1]}, options);
  y.copy_(torch::relu(x * scale + shift));
  return STITCH_OK;
}
