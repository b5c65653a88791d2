// The built-in Coder's knobs — what refine tunes and what a built-in retry changes — as a JSON
// variant recorded with every attempt:
//   {"cuda_graph": false,                     replay a CUDA graph, or launch subtasks directly
//    "tune_iterations": 20,                   timing iterations per cuBLASLt candidate at init
//    "subtasks": {"<subtask id>": {"block": 512, "split_tf32x3": 0, ...}}}   tunable overrides
// An empty object is the plan's own choices. Unknown keys are errors (a typo must not silently
// tune nothing).
#pragma once

#include <nlohmann/json.hpp>

#include "codegen/program_emitter.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::agents {

struct AppliedVariant {
  plan::Plan plan;  // with the tunable overrides
  codegen::EmitOptions emit;
};

Result<AppliedVariant> apply_variant(const plan::Plan& plan, const nlohmann::json& variant);

// The tunables an override may set, per kernel family, and the values each accepts.
bool tunable_may_be_overridden(const plan::Subtask& subtask, const std::string& key, int64_t value);

}  // namespace stitch::agents
