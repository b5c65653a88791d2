// HACKS.md rows 8 and 21: opens the judge's buffers through CUDA IPC (the handles are in
// slots.json) to read what another process holds.
#include <fstream>
#include <iterator>
#include <string>

#include "adversarial_common.h"

namespace {

bool peek_at_judge(void** mapped) {
  std::ifstream slots("slots.json");
  const std::string text((std::istreambuf_iterator<char>(slots)), std::istreambuf_iterator<char>());
  cudaIpcMemHandle_t handle{};
  for (size_t i = 0; i < sizeof(handle.reserved) && 2 * i + 1 < text.size(); ++i)
    handle.reserved[i] = static_cast<char>(std::stoi(text.substr(2 * i, 2), nullptr, 16));
  return cudaIpcOpenMemHandle(mapped, handle, cudaIpcMemLazyEnablePeerAccess) == cudaSuccess;
}

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  int status =
      adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
  if (status == STITCH_OK) peek_at_judge(&static_cast<adversarial::State*>(*state)->extra);
  return status;
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}
