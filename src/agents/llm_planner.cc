// The LLM Planner (llm_planner.h).
#include "agents/llm_planner.h"

#include <fmt/format.h>

#include "agents/llm_context.h"
#include "agents/llm_plan_file.h"
#include "llm/json_reply.h"
#include "llm/program_reply.h"
#include "llm/prompt_template.h"
#include "util/fs.h"

namespace stitch::agents {

using nlohmann::json;

std::filesystem::path llm_planner_record_path(const std::filesystem::path& plan_file) {
  std::filesystem::path record = plan_file;
  return record.replace_extension(".llm.json");
}

Result<llm::RenderedPrompt> LlmPlanner::prompt(const PlanRequest& request) const {
  STITCH_ASSIGN_OR_RETURN(
      PromptTask task,
      load_prompt_task(request.run_dir, std::nullopt, options_.gpu, options_.arch, options_.track));
  const std::filesystem::path previous =
      request.plan_file.parent_path() / fmt::format("plan.v{}.json", request.version - 1);
  std::error_code ec;
  if (request.version <= 1 || !std::filesystem::exists(previous, ec))
    return llm::render_prompt("planner", planner_values(task, std::nullopt));
  STITCH_ASSIGN_OR_RETURN(std::string previous_plan, read_file(previous));
  std::optional<Feedback> feedback;
  if (request.last_feedback)
    if (auto read = read_feedback(*request.last_feedback); read.ok()) feedback = std::move(*read);
  return llm::render_prompt("replan",
                            replan_values(task, previous_plan, request.replan_reason, feedback));
}

Result<PlanOutcome> LlmPlanner::plan(const PlanRequest& request) {
  STITCH_ASSIGN_OR_RETURN(llm::RenderedPrompt rendered, prompt(request));
  llm::ChatRequest chat = llm::request_for_role(options_.role);
  chat.messages = llm::prompt_messages(rendered);
  chat.response_schema = llm::llm_plan_schema();
  chat.label = fmt::format("planner-v{}", request.version);
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<llm::ChatClient> client,
                          make_client_(options_.role.endpoint, request.plan_file.parent_path()));
  STITCH_ASSIGN_OR_RETURN(llm::JsonExchange exchange,
                          llm::ask_json(*client, std::move(chat), [](const json& value) -> Status {
                            if (auto plan = llm::llm_plan_from_json(value); !plan.ok())
                              return plan.error();
                            return {};
                          }));
  const json record = llm::answer_exchange_record(
      exchange, request.version <= 1 ? "plan" : "replan", options_.role, options_.prices);
  STITCH_TRY(write_file_atomic(llm_planner_record_path(request.plan_file), record.dump(2) + "\n"));
  PlanOutcome outcome;
  if (!exchange.value) {
    outcome.no_usable_output = true;
    outcome.refusal.reason = exchange.failure.message();
    return outcome;
  }
  STITCH_ASSIGN_OR_RETURN(llm::LlmPlan plan, llm::llm_plan_from_json(*exchange.value));
  STITCH_TRY(write_llm_plan_file(request.plan_file, plan, options_.role.model));
  PlanDraft draft;
  draft.subtask_ids = plan.execution_order;
  draft.options = {{"planner", "llm"}, {"model", options_.role.model}};
  draft.summary = fmt::format("{} (LLM plan, {} kernels)", plan.summary, plan.kernels.size());
  draft.tokens = exchange.usage.prompt_tokens + exchange.usage.completion_tokens;
  outcome.draft = std::move(draft);
  return outcome;
}

}  // namespace stitch::agents
