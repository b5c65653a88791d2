// Adversarial (HACKS.md row 21): forward tries to hand work to a child process. The sandbox refuses
// fork; the attempt is reported. Expected: finding hidden_work. The output is computed honestly.
#include <unistd.h>

#include "adversarial_common.h"

int program_init_hook(adversarial::State*) {
  return STITCH_OK;
}

int program_forward(adversarial::State* state, const stitch_tensor* inputs, stitch_tensor* outputs,
                    cudaStream_t stream) {
  pid_t pid = fork();
  if (pid == 0) {  // only reached where the sandbox let the fork through
    sleep(30);
    _exit(0);
  }
  return adversarial::launch_compute(state, inputs[0], outputs[0], stream);
}
