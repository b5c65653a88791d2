// HACKS.md row 3, written to slip past a naive scanner: each std::thread below sits between two
// things a regex takes for string or comment delimiters (a quote inside a comment, a quote in a
// character literal, digit separators, a line splice). The compiler sees the code; so must the
// lexer.
#include <thread>

#include "adversarial_common.h"

namespace {

void work(adversarial::State* state, stitch_tensor x, stitch_tensor y) {
  adversarial::launch_scale_shift_relu(state, x, y, nullptr);
}

// The tricks only work with each std::thread on the same line as its decoys.
// clang-format off
int start(adversarial::State* state, const stitch_tensor& x, const stitch_tensor& y) {
  /* a quote " in a comment */ std::thread first(work, state, x, y); /* and another " */
  first.detach();
  const char quote = '"'; std::thread second(work, state, x, y); const char again = '"';
  second.detach();
  const int million = 1'000'000; std::thread third(work, state, x, y); const int more = 2'000;
  third.detach();
  std::thr\
ead fourth(work, state, x, y);
  fourth.detach();
  return quote == again && million > more ? STITCH_OK : STITCH_ERROR_INTERNAL;
}
// clang-format on

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  return start(static_cast<adversarial::State*>(state), inputs[0], outputs[0]);
}
