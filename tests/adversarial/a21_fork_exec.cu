// HACKS.md row 21: work the GPU timer cannot see. A child process forked at init lives on (a daemon
// doing work between calls), and a shell command runs another program.
#include <stdlib.h>
#include <unistd.h>

#include "adversarial_common.h"

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  if (fork() == 0) {
    execl("/bin/sh", "sh", "-c", "sleep 60", static_cast<char*>(nullptr));
    _exit(0);
  }
  system("true");
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  return adversarial::launch_scale_shift_relu(static_cast<adversarial::State*>(state), inputs[0],
                                              outputs[0], static_cast<cudaStream_t>(stream));
}
