// HACKS.md row 27: a load-time constructor does work at dlopen (before any sandbox or timer), here
// allocating and warming a buffer and launching a kernel on the device.
#include "adversarial_common.h"

namespace {
float* g_warm = nullptr;
}

__attribute__((constructor)) static void warm_up_at_load() {
  cudaMalloc(&g_warm, 1 << 20);
  cudaMemset(g_warm, 0, 1 << 20);
}

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}
