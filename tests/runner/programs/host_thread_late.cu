// Adversarial (HACKS.md row 3): forward returns at once; a detached host thread launches the real
// work later, after the timer has stopped. Expected: finding host_thread.
#include <chrono>
#include <thread>

#include "adversarial_common.h"

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  stitch_tensor x = inputs[0], y = outputs[0];
  std::thread([state, x, y, stream]() mutable {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    adversarial::launch_compute(state, x, y, stream);
  }).detach();
  return STITCH_OK;
}
