// HACKS.md row 1: links libc10 (built with -lc10 from the torch install) and calls into it; a real
// program would go on to use ATen. The source declares the c10 namespace; the library links
// libc10.so and imports a c10:: symbol.
#include "adversarial_common.h"

namespace c10 {
bool IsNUMAEnabled();
}

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  if (c10::IsNUMAEnabled()) adversarial::init_error() = "numa";
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}
