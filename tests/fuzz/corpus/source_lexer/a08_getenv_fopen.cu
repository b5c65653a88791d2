// HACKS.md row 8: copies the expected answer instead of computing it. The path of a reference file
// comes from the environment; its floats are copied into the output.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "adversarial_common.h"

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  const char* path = std::getenv("STITCH_REFERENCE_OUTPUT");
  FILE* file = path ? std::fopen(path, "rb") : nullptr;
  if (file == nullptr)
    return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                                outputs[0], static_cast<cudaStream_t>(stream));
  std::vector<float> answer(static_cast<size_t>(adversarial::element_count(outputs[0])));
  const size_t got = std::fread(answer.data(), sizeof(float), answer.size(), file);
  std::fclose(file);
  cudaMemcpy(outputs[0].data, answer.data(), got * sizeof(float), cudaMemcpyHostToDevice);
  return STITCH_OK;
}
