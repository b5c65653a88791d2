// Honest near-miss (HACKS.md row 2): work runs on the program's own stream, but that stream waits
// for the caller's and the caller's waits for it (events), so the caller's stream sees it all.
// Expected: status ok and no fatal finding (a non-fatal side_stream note is allowed).
#include "adversarial_common.h"

namespace {
struct Events {
  cudaEvent_t ready = nullptr;
  cudaEvent_t done = nullptr;
};
}  // namespace

int program_init_hook(adversarial::State* state) {
  std::string* error_sink = &state->error;
  auto* events = new Events;
  state->extra = events;
  STITCH_CUDA_CHECK(cudaStreamCreateWithFlags(&state->side, cudaStreamNonBlocking));
  STITCH_CUDA_CHECK(cudaEventCreateWithFlags(&events->ready, cudaEventDisableTiming));
  STITCH_CUDA_CHECK(cudaEventCreateWithFlags(&events->done, cudaEventDisableTiming));
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  std::string* error_sink = &state->error;
  auto* events = static_cast<Events*>(state->extra);
  STITCH_CUDA_CHECK(cudaEventRecord(events->ready, stream));
  STITCH_CUDA_CHECK(cudaStreamWaitEvent(state->side, events->ready, 0));
  int status = adversarial::launch_compute(state, inputs[0], outputs[0], state->side);
  if (status != STITCH_OK) return status;
  STITCH_CUDA_CHECK(cudaEventRecord(events->done, state->side));
  STITCH_CUDA_CHECK(cudaStreamWaitEvent(stream, events->done, 0));
  return STITCH_OK;
}
