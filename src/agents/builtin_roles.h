// The built-in Planner and Coder (no LLM, deterministic).
//
// BuiltinPlanner: plan/planner.h's passes over graph.json. A replan walks a fixed ladder of
// planner options, each more conservative than the last — the defaults; strict FP32 GEMMs (no
// 3xTF32); no GEMM reassociation; no GEMV lowering — taking the first rung not yet tried. A graph
// outside the covered op families is refused with the planner's message.
//
// BuiltinCoder: instantiates the kernel library for the plan (codegen/program_emitter.h) with a
// variant (program_variant.h), whole program at once. A retry after a failure changes what the
// feedback points at — a precision or computation error → strict FP32 GEMMs; a crash, hang or bad
// memory access → no CUDA graph — then the remaining combinations; with none left it has nothing
// new, and the engine replans.
#pragma once

#include <vector>

#include "agents/roles.h"
#include "plan/passes.h"

namespace stitch::agents {

class BuiltinPlanner final : public Planner {
 public:
  explicit BuiltinPlanner(plan::PlanOptions base = {}) : base_(std::move(base)) {}
  Result<PlanOutcome> plan(const PlanRequest& request) override;

  // The ladder's rungs, in order: {"rung": name, planner option overrides...}.
  static std::vector<nlohmann::json> option_ladder();

 private:
  plan::PlanOptions base_;
};

class BuiltinCoder final : public Coder {
 public:
  // `include_dirs`: where the compiler finds stitch/program.h and kernels/ (for library detection).
  explicit BuiltinCoder(std::vector<fs::path> include_dirs)
      : include_dirs_(std::move(include_dirs)) {}
  CoderGranularity granularity() const override { return CoderGranularity::whole_program; }
  Result<CodeOutcome> write(const CodeRequest& request) override;

  // The variants a retry may try for `plan_file`, ordered for the feedback's suggestion rule.
  static Result<std::vector<nlohmann::json>> retry_variants(const fs::path& plan_file,
                                                            const std::string& suggestion_rule);

 private:
  std::vector<fs::path> include_dirs_;
};

// A one-line description of a variant: "plan defaults", "cuda_graph=false, s01 block=512".
std::string describe_variant(const nlohmann::json& variant);

}  // namespace stitch::agents
