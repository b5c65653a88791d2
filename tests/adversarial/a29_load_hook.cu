// HACKS.md row 29: code run at load through a split section name (no `constructor` anywhere), which
// makes a raw system call from inline assembly: neither an import nor an identifier the rules know.
// The source checks see the section attribute and the instruction; the library audit sees a
// function in DT_INIT_ARRAY that no toolchain put there.
#include "adversarial_common.h"

namespace {
long g_pid = 0;

void at_load() {
  long result;
  asm volatile("sys" "call" : "=a"(result) : "a"(39L) : "rcx", "r11", "memory");
  g_pid = result;
}

__attribute__((used, section("." "init_array"))) void (*g_hook)() = at_load;
}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}
