// The LLM Coder, whole-program mode (llm_coder.h).
#include "agents/llm_coder.h"

#include <fmt/format.h>

#include "agents/llm_context.h"
#include "llm/program_reply.h"
#include "llm/prompt_template.h"
#include "util/fs.h"
#include "verify/verifier.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

constexpr std::string_view kProgramFile = "program.cu";

// The program a retry revises, and the feedback on it.
struct PreviousAttempt {
  std::string program;
  Feedback feedback;
};

// The last attempt's program (attempts/NN/src/program.cu beside its feedback.json) and feedback;
// nullopt when the request carries none or either cannot be read (skill 1 then starts afresh).
std::optional<PreviousAttempt> previous_attempt(const CodeRequest& request) {
  if (!request.feedback) return std::nullopt;
  auto feedback = read_feedback(*request.feedback);
  auto program = read_file(request.feedback->parent_path() / "src" / kProgramFile);
  if (!feedback.ok() || !program.ok()) return std::nullopt;
  return PreviousAttempt{std::move(*program), std::move(*feedback)};
}

}  // namespace

Result<CodeOutcome> LlmCoder::write(const CodeRequest& request) {
  const std::filesystem::path attempt_dir = request.out_dir.parent_path();
  std::optional<std::filesystem::path> plan_file;
  if (std::error_code ec;
      !request.plan_file.empty() && std::filesystem::exists(request.plan_file, ec))
    plan_file = request.plan_file;
  STITCH_ASSIGN_OR_RETURN(
      PromptTask task,
      load_prompt_task(request.run_dir, plan_file, options_.gpu, options_.arch, options_.track));
  const std::optional<PreviousAttempt> previous = previous_attempt(request);
  const CoderSkill skill = previous ? CoderSkill::revise : CoderSkill::generate;
  const int subtask = -1;  // whole-program mode: every prompt asks for the whole file
  auto prompt = previous
                    ? llm::render_prompt(
                          "coder_revise",
                          coder_revise_values(task, subtask, previous->program, previous->feedback))
                    : llm::render_prompt("coder_generate", coder_generate_values(task, subtask));
  if (!prompt.ok()) return prompt.error();

  llm::ChatRequest chat = llm::request_for_role(options_.role);
  chat.messages = llm::prompt_messages(*prompt);
  STITCH_TRY(make_dirs(request.out_dir));
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<llm::ChatClient> client,
                          make_client_(options_.role.endpoint, attempt_dir));
  STITCH_ASSIGN_OR_RETURN(llm::ProgramExchange exchange,
                          llm::ask_for_program(*client, std::move(chat)));
  const json record =
      llm::program_exchange_record(exchange, enum_name(skill), options_.role, options_.prices);
  STITCH_TRY(write_file_atomic(attempt_dir / kLlmCoderRecord, record.dump(2) + "\n"));

  CodeOutcome outcome;
  if (exchange.extraction.outcome != llm::StepOutcome::usable) {
    outcome.why_not = exchange.extraction.failure.message();
    return outcome;
  }
  const std::filesystem::path source = request.out_dir / kProgramFile;
  STITCH_TRY(write_file_atomic(source, exchange.extraction.source));
  CodeDraft draft;
  draft.sources = {source};
  draft.libraries = program_link_libraries({}, draft.sources, options_.include_dirs);
  const llm::Usage usage = exchange.usage();
  draft.tokens = usage.prompt_tokens + usage.completion_tokens;
  draft.label = fmt::format("llm {}: {}", enum_name(skill), options_.role.model);
  outcome.draft = std::move(draft);
  return outcome;
}

}  // namespace stitch::agents
