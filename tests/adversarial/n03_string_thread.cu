// Near-miss for rows 1, 3, 8, 12, 21: string literals that mention forbidden things, in error
// messages. Strings are data, not code.
#include "adversarial_common.h"

namespace {

const char* const kExplanations[] = {
    "this program does not use std::thread or pthread_create",
    "no fork(), system() or popen() here",
    "never calls getenv(\"HOME\") or fopen(path, \"r\")",
    "torch::relu and at::Tensor are what the reference uses",
    "no __float2half and no CUBLAS_COMPUTE_32F_FAST_TF32",
    R"(raw strings too: std::thread t(work); cudaIpcOpenMemHandle(&p, h, 0);)",
};

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  const int status =
      adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
  if (status != STITCH_OK) adversarial::init_error() += std::string(" (") + kExplanations[0] + ")";
  return status;
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  if (n_inputs != 1) {
    static_cast<adversarial::State*>(state)->error =
        "expected one input; std::async would not help";
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}
