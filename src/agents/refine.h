// The built-in refine step (the built-in Verifier → Coder feedback): profile-guided autotuning.
// The best program's kernels are attributed to plan subtasks (a generated kernel carries its
// subtask's functor name; library kernels — cuBLASLt's — are shared among the GEMM subtasks by the
// cost model's floor), the hottest subtasks' tunables get candidate settings (elementwise block
// size, strict FP32 instead of 3xTF32 for a GEMM), then program-wide knobs (cuBLASLt algorithm
// tuning effort, CUDA graph on/off). The engine verifies each candidate and keeps it only when it
// is correct and faster beyond the measured spread (routing.h faster_beyond_spread).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agents/roles.h"
#include "plan/plan.h"

namespace stitch::agents {

// Share of the forward's kernel time per subtask id (sums to 1 over the subtasks that got any):
// from the profile when given, else from the cost model's roofline floors.
std::map<std::string, double> subtask_time_shares(const plan::Plan& plan,
                                                  const std::optional<ProfileSummary>& profile);

// The candidates for `plan` under the best program's variant, most promising first; none that
// the variant already has.
std::vector<RefineCandidate> refine_candidates(const plan::Plan& plan,
                                               const nlohmann::json& best_variant,
                                               const std::optional<ProfileSummary>& profile,
                                               int hot_subtasks = 3);

class BuiltinRefinePolicy final : public RefinePolicy {
 public:
  Result<std::vector<RefineCandidate>> candidates(
      const fs::path& plan_file, const nlohmann::json& best_variant,
      const std::optional<ProfileSummary>& profile) override;
};

}  // namespace stitch::agents
