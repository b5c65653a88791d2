// Near-miss for row 27: namespace-scope objects whose initialisation runs no code at load:
// constants, constexpr values, default-constructed standard strings, device arrays, a
// function-local static.
#include "adversarial_common.h"

namespace {

constexpr int kThreads = 256;
const float kZero = 0.0f;
static const dim3 kBlock(kThreads);
static std::string g_last_note;
static int g_calls = 0;
__device__ float g_scratch[32];
__constant__ float g_bias[4] = {0.0f, 0.0f, 0.0f, 0.0f};
int declared_later(int a, float* b);
adversarial::State* g_last_state = nullptr;

int& call_count() {
  static int count = 0;  // initialised on first call, not at load
  return count;
}

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  g_last_note.clear();
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  ++g_calls;
  ++call_count();
  g_last_state = static_cast<adversarial::State*>(state);
  if (kBlock.x != kThreads || kZero != 0.0f) return STITCH_ERROR_INTERNAL;
  return adversarial::launch_scale_shift_relu(g_last_state, inputs[0], outputs[0],
                                              static_cast<cudaStream_t>(stream));
}
