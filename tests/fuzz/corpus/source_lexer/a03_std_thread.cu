// HACKS.md row 3: the forward returns at once and a detached host thread launches the real work a
// little later, after the caller's events have been recorded.
#include <chrono>
#include <thread>

#include "adversarial_common.h"

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state_ptr, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  auto* state = static_cast<adversarial::State*>(state_ptr);
  stitch_tensor x = inputs[0];
  stitch_tensor y = outputs[0];
  std::thread([state, x, y]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    adversarial::launch_scale_shift_relu(state, x, y, nullptr);
  }).detach();
  return STITCH_OK;
}
