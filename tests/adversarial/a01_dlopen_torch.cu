// HACKS.md row 1: loads libtorch at run time so nothing torch shows in DT_NEEDED, then calls
// at::relu through dlsym. Caught by the library name in a string and by the dlopen import.
#include <dlfcn.h>

#include "adversarial_common.h"

namespace {
using relu_fn = void* (*)(const void*);
relu_fn load_relu() {
  void* torch = dlopen("libtorch_cuda.so", RTLD_NOW | RTLD_GLOBAL);
  return torch ? reinterpret_cast<relu_fn>(dlsym(torch, "_ZN2at4reluERKNS_6TensorE")) : nullptr;
}
}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  int status =
      adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
  if (status == STITCH_OK)
    static_cast<adversarial::State*>(*state)->extra = reinterpret_cast<void*>(load_relu());
  return status;
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  auto* s = static_cast<adversarial::State*>(state);
  if (s->extra != nullptr) reinterpret_cast<relu_fn>(s->extra)(inputs[0].data);
  return adversarial::launch_scale_shift_relu(s, inputs[0], outputs[0],
                                              static_cast<cudaStream_t>(stream));
}
