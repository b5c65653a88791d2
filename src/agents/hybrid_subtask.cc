// Asking for one subtask's fragment, and the subtask's own program (hybrid_subtask.h).
#include "agents/hybrid_subtask.h"

#include <fmt/format.h>

#include "llm/extract.h"
#include "plan/planner.h"
#include "plan/subgraph.h"

namespace stitch::agents {

llm::Usage FragmentExchange::usage() const {
  llm::Usage total;
  for (const llm::ChatReply& reply : replies) {
    total.prompt_tokens += reply.usage.prompt_tokens;
    total.completion_tokens += reply.usage.completion_tokens;
    total.reasoning_tokens += reply.usage.reasoning_tokens;
  }
  return total;
}

std::string find_fragment(const llm::ChatReply& reply, const codegen::SubtaskSignature& signature,
                          std::string& why_not) {
  const std::string& text = reply.content.empty() ? reply.reasoning : reply.content;
  if (text.empty()) {
    why_not = "the reply is empty";
    return "";
  }
  std::vector<std::string> candidates;
  for (const llm::CodeBlock& block : llm::find_code_blocks(text))
    if (llm::is_program_language(block.language) && block.closed) candidates.push_back(block.code);
  if (candidates.empty()) candidates.push_back(text);  // unfenced code
  for (const std::string& candidate : candidates)
    if (codegen::check_subtask_code(candidate, signature).empty()) return candidate;
  why_not = reply.finish == llm::FinishReason::length
                ? "the reply was cut off by the token limit"
                : codegen::check_subtask_code(candidates.front(), signature);
  return "";
}

Result<FragmentExchange> ask_for_fragment(llm::ChatClient& client, llm::ChatRequest request,
                                          const codegen::SubtaskSignature& signature) {
  FragmentExchange exchange;
  for (int round = 0; round < 2; ++round) {
    STITCH_ASSIGN_OR_RETURN(llm::ChatReply reply, client.complete(request));
    exchange.replies.push_back(reply);
    exchange.why_not.clear();
    exchange.code = find_fragment(reply, signature, exchange.why_not);
    if (!exchange.code.empty()) break;
    request.messages.push_back({llm::Role::assistant, reply.content, {}, {}});
    request.messages.push_back(
        {llm::Role::user,
         fmt::format("Your reply held no usable fragment: {}.\n\nReply with one ```cuda block "
                     "that defines exactly:\n\n{}",
                     exchange.why_not, signature.declaration()),
         {},
         {}});
  }
  return exchange;
}

Result<std::variant<OwnProgram, std::string>> own_program(const plan::Plan& plan,
                                                          const plan::Subtask& subtask,
                                                          const codegen::LlmSubtaskCode& code,
                                                          const codegen::EmitOptions& options) {
  using Outcome = std::variant<OwnProgram, std::string>;
  STITCH_ASSIGN_OR_RETURN(codegen::SubtaskSignature signature,
                          codegen::subtask_signature(plan, subtask));
  if (!signature.contiguous())
    return Outcome{"it reads strided views, which its own program would hand over contiguous"};
  STITCH_ASSIGN_OR_RETURN(ir::Graph subgraph, plan::subtask_subgraph(plan, subtask));
  plan::PlanOptions plan_options;
  plan_options.peaks = plan.peaks;
  plan_options.keep_uncovered = true;
  auto own_plan = plan::make_plan(subgraph, plan_options);
  if (!own_plan.ok())
    return Outcome{"its subgraph does not plan on its own: " + own_plan.error().message};
  if (own_plan->subtasks.size() != 1)
    return Outcome{
        fmt::format("its subgraph plans into {} subtasks on its own", own_plan->subtasks.size())};
  STITCH_ASSIGN_OR_RETURN(codegen::SubtaskSignature own_signature,
                          codegen::subtask_signature(*own_plan, own_plan->subtasks[0]));
  if (!own_signature.same_operands(signature))
    return Outcome{"its own program would hand it other operands"};
  codegen::EmitOptions own_options = options;
  own_options.llm_subtasks = {{own_plan->subtasks[0].id, code}};
  STITCH_ASSIGN_OR_RETURN(codegen::EmittedProgram program,
                          codegen::emit_program(*own_plan, own_options));
  const std::string what = fmt::format("subtask {} of task '{}'", subtask.id, plan.task);
  return Outcome{OwnProgram{plan::subgraph_task_source(subgraph, what), std::move(program)}};
}

}  // namespace stitch::agents
