// An LLM Planner's plan as the run keeps it: plans/plan.vN.json holding the typed plan
// (llm/answers.h LlmPlan) under format "stitchcuda.llm_plan", beside the built-in Planner's plans
// (plan/plan_json.h) in the same place. The reader tells the two apart, so the LLM Coder reads
// either; the built-in Coder implements only the built-in Planner's plans.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "llm/answers.h"
#include "util/result.h"

namespace stitch::agents {

inline constexpr std::string_view kLlmPlanFormat = "stitchcuda.llm_plan";

Status write_llm_plan_file(const std::filesystem::path& path, const llm::LlmPlan& plan,
                           const std::string& model);
// The LLM plan in `path`; nullopt when the file holds another kind of plan (a built-in one); an
// Error when it cannot be read or is an LLM plan that does not parse.
Result<std::optional<llm::LlmPlan>> read_llm_plan_file(const std::filesystem::path& path);

// The plan as the Coder's prompt shows it (Markdown): summary, kernels in execution order with
// what each computes from what, buffers, fusion decisions, weight preparation, optimisations,
// host strategy.
std::string describe_llm_plan(const llm::LlmPlan& plan);

}  // namespace stitch::agents
