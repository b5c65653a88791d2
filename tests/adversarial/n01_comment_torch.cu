// Near-miss for row 1: comments that talk about what the program does not do. We do not use
// torch:: or at::Tensor here, and there is no #include <torch/extension.h>; the reference calls
// torch.relu(x * scale + shift), which this file reimplements. Nor do we start a std::thread,
// call fork(), getenv() or fopen(), or use __float2half / CUBLAS_COMPUTE_32F_FAST_TF32.
#include "adversarial_common.h"

/* A block comment too: at::relu, c10::Half, pybind11::module, #include <ATen/ATen.h>,
   __attribute__((constructor)), cudaCtxResetPersistingL2Cache(), std::async. */

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  // torch::nn::Module would hold these; we copy them ourselves.
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  return adversarial::launch_scale_shift_relu(
      static_cast<adversarial::State*>(state), inputs[0], outputs[0],
      static_cast<cudaStream_t>(stream));  // not at::cuda::getCurrentStream()
}
