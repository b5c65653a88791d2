// Near-miss for row 2: the program runs on its own stream but joins it both ways (the side stream
// waits for the caller's work, the caller's stream waits for the side stream's) with events.
// Honest: a non-fatal note at most.
#include "adversarial_common.h"

namespace {

struct Streams {
  cudaStream_t side = nullptr;
  cudaEvent_t inputs_ready = nullptr;
  cudaEvent_t done = nullptr;
};

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state_out) {
  adversarial::State* state = nullptr;
  const int status = adversarial::create_state(params, n_params, &state);
  if (status != STITCH_OK) return status;
  auto* streams = new Streams;
  if (cudaStreamCreateWithFlags(&streams->side, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreateWithFlags(&streams->inputs_ready, cudaEventDisableTiming) != cudaSuccess ||
      cudaEventCreateWithFlags(&streams->done, cudaEventDisableTiming) != cudaSuccess)
    return STITCH_ERROR_CUDA;
  state->extra = streams;
  *state_out = state;
  return STITCH_OK;
}

extern "C" int stitch_forward(void* state_ptr, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  auto* state = static_cast<adversarial::State*>(state_ptr);
  auto* streams = static_cast<Streams*>(state->extra);
  const auto caller = static_cast<cudaStream_t>(stream);
  cudaEventRecord(streams->inputs_ready, caller);
  cudaStreamWaitEvent(streams->side, streams->inputs_ready, 0);
  const int status =
      adversarial::launch_scale_shift_relu(state, inputs[0], outputs[0], streams->side);
  cudaEventRecord(streams->done, streams->side);
  cudaStreamWaitEvent(caller, streams->done, 0);
  return status;
}
