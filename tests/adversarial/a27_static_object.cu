// HACKS.md row 27: the same as a27_constructor.cu with C++ instead of an attribute: a
// namespace-scope object whose constructor runs at load time.
#include "adversarial_common.h"

namespace {

class Prefetcher {
 public:
  Prefetcher() {
    cudaMalloc(&buffer_, 1 << 20);
    cudaMemset(buffer_, 0, 1 << 20);
  }

 private:
  void* buffer_ = nullptr;
};

Prefetcher g_prefetcher;

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}
