// The hybrid Coder's check of one LLM-written subtask alone (agents/hybrid_coder.h), over the real
// processes: the subtask's task file (its subgraph) captured by the Python harness into
// <dir>/capture, then the loop's Verifier on the subtask's own program against that capture —
// the same hardened checks, secret inputs and judge as a whole program.
#pragma once

#include "agents/hybrid_coder.h"
#include "agents/roles.h"
#include "harness/harness.h"

namespace stitch::app {

class SystemSubtaskChecker final : public agents::SubtaskChecker {
 public:
  SystemSubtaskChecker(agents::CandidateVerifier& verifier, harness::HarnessLocation harness)
      : verifier_(verifier), harness_(std::move(harness)) {}
  Result<agents::AttemptResult> check(const agents::SubtaskCheckRequest& request) override;

 private:
  agents::CandidateVerifier& verifier_;
  harness::HarnessLocation harness_;
};

}  // namespace stitch::app
