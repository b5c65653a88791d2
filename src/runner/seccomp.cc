// The runner's seccomp filter: src/sandbox/seccomp_filter.h's, installed after CUDA is initialised.
// Threads (clone with CLONE_THREAD) still start, because CUDA and its libraries need them; refused
// calls trap into a SIGSYS handler that counts them and makes the call return EPERM, so an attempt
// is reported (hidden_work) instead of killing the runner.
#include "runner/sandbox.h"

namespace stitch::runner {

SeccompReport install_process_filter(sandbox::SeccompMode mode) {
  sandbox::LayerReport layer = sandbox::install_seccomp_filter(mode);
  return {layer.set_up, layer.detail};
}

std::vector<SeccompRefusal> seccomp_refusals() {
  std::vector<SeccompRefusal> refusals;
  for (const auto& refusal : sandbox::seccomp_refusals())
    refusals.push_back({refusal.nr, refusal.name, refusal.count});
  return refusals;
}

}  // namespace stitch::runner
