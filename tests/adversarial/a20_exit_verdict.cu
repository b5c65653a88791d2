// HACKS.md row 20: writes the runner's result file itself and exits 0 before the runner can.
#include <cstdio>
#include <cstdlib>

#include "adversarial_common.h"

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  if (FILE* result = std::fopen("runner.json", "w")) {
    std::fputs("{\"status\": \"ok\", \"timings_ms\": [0.001]}\n", result);
    std::fclose(result);
  }
  std::exit(0);
}
