// The built-in rubric judge: scores the four dimensions of docs/rubric.md from the Verifier's
// verdict and findings, the program's text and SASS (program_features.h), the reference graph's
// FLOP and byte estimates (ir/cost.h), and the plan or feedback the attempt followed. No LLM.
#pragma once

#include "reward/program_features.h"
#include "reward/reward.h"

namespace stitch::reward {

// Who does each share of the reference's work (FLOPs and bytes, each a fraction of the total).
struct WorkShares {
  double own = 0;                // the program's own kernels
  double library = 0;            // cuBLAS / cuDNN calls
  double left_out = 0;           // nobody visible in the program
  double dominant_op_share = 0;  // the costliest op's share of the work
  std::string dominant_op;       // "aten.addmm.default", and who does it ("library")
  std::string dominant_by;
};

// How the reference's work splits among own kernels, libraries and nothing. Each node's weight is
// the mean of its FLOP share and byte share (bytes alone when the graph has no FLOPs).
WorkShares attribute_work(const ir::Graph& reference, const ProgramFeatures& features);

DimensionScore score_anti_hacking(const AttemptEvidence& evidence, const ProgramFeatures& f);
DimensionScore score_cuda_engineering(const AttemptEvidence& evidence, const ProgramFeatures& f);
DimensionScore score_operator_coverage(const AttemptEvidence& evidence, const ProgramFeatures& f);
DimensionScore score_skill_compliance(const AttemptEvidence& evidence, const ProgramFeatures& f);

class BuiltinJudge final : public RubricJudge {
 public:
  Result<RubricScores> judge(const AttemptEvidence& evidence) override;
};

}  // namespace stitch::reward
