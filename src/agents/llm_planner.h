// The LLM Planner (--planner llm): the planner prompt (llm/prompts/planner.md) filled with the
// task, its captured graph, the target GPU and the precision track; on a replan the replan prompt
// with the abandoned plan, the reason and the last feedback. The answer is the typed plan of
// llm/answers.h, asked for as JSON (response_format where the server supports it), repaired or
// re-asked once with the parse error; a model that never gives one ends the run no_usable_output.
// The plan lands in plans/plan.vN.json (llm_plan_file.h), the exchange's record in
// plans/plan.vN.llm.json and its transcript in plans/llm/. Its kernels are the plan's subtasks;
// the LLM Coder gets the plan in its prompt.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "agents/llm_coder.h"
#include "agents/roles.h"
#include "llm/config.h"
#include "llm/prompt_template.h"

namespace stitch::agents {

struct LlmPlannerOptions {
  llm::RoleConfig role;  // the Planner's endpoint, model and sampling
  llm::PriceTable prices;
  const GpuPeakRow* gpu = nullptr;  // nullptr: the H200's facts
  std::string arch;
  Track track = Track::fp32;
};

// plans/plan.vN.llm.json beside plans/plan.vN.json.
std::filesystem::path llm_planner_record_path(const std::filesystem::path& plan_file);

class LlmPlanner final : public Planner {
 public:
  LlmPlanner(LlmPlannerOptions options, ChatClientFactory make_client)
      : options_(std::move(options)), make_client_(std::move(make_client)) {}
  Result<PlanOutcome> plan(const PlanRequest& request) override;

 private:
  Result<llm::RenderedPrompt> prompt(const PlanRequest& request) const;

  LlmPlannerOptions options_;
  ChatClientFactory make_client_;
};

}  // namespace stitch::agents
