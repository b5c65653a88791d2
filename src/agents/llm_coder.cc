// The LLM Coder, whole-program mode (llm_coder.h).
#include "agents/llm_coder.h"

#include <optional>
#include <thread>

#include <fmt/format.h>

#include "agents/doc_context.h"
#include "agents/llm_context.h"
#include "agents/llm_verifier.h"
#include "llm/program_reply.h"
#include "llm/prompt_template.h"
#include "llm/tool_loop.h"
#include "util/fs.h"
#include "verify/verifier.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

constexpr std::string_view kProgramFile = "program.cu";

// The program a retry revises, the feedback on it, and the Verifier's analysis when there is one.
struct PreviousAttempt {
  std::string program;
  Feedback feedback;
  std::optional<llm::VerifierAnalysis> analysis;
};

// The last attempt's program (attempts/NN/src/program.cu beside its feedback.json), feedback and
// analysis.json; nullopt when the request carries none or either of the first two cannot be read
// (skill 1 then starts afresh).
std::optional<PreviousAttempt> previous_attempt(const CodeRequest& request) {
  if (!request.feedback) return std::nullopt;
  const std::filesystem::path dir = request.feedback->parent_path();
  auto feedback = read_feedback(*request.feedback);
  auto program = read_file(dir / "src" / kProgramFile);
  if (!feedback.ok() || !program.ok()) return std::nullopt;
  PreviousAttempt previous{std::move(*program), std::move(*feedback), std::nullopt};
  if (std::error_code ec; std::filesystem::exists(dir / kAnalysisFile, ec))
    if (auto analysis = read_verifier_analysis(dir / kAnalysisFile); analysis.ok())
      previous.analysis = std::move(*analysis);
  return previous;
}

Result<llm::RenderedPrompt> coder_prompt(const PromptTask& task,
                                         const std::optional<PreviousAttempt>& previous,
                                         const DocSearch& search_docs) {
  const int subtask = -1;  // whole-program mode: every prompt asks for the whole file
  if (!previous) return llm::render_prompt("coder_generate", coder_generate_values(task, subtask));
  llm::PromptValues values =
      coder_revise_values(task, subtask, previous->program, previous->feedback);
  if (previous->analysis) values["feedback"] += "\n\n" + describe_analysis(*previous->analysis);
  if (search_docs) values["feedback"] += prefetched_documentation(search_docs, previous->feedback);
  return llm::render_prompt("coder_revise", values);
}

json tool_calls_json(const std::vector<llm::ToolCallRecord>& calls) {
  json out = json::array();
  for (const llm::ToolCallRecord& call : calls)
    out.push_back({{"name", call.name}, {"arguments", call.arguments}, {"answer", call.answer}});
  return out;
}

// What the model is told when its last reply on this scope held no usable program.
std::string unusable_note(const std::string& last_unusable) {
  return "\n\n# Your last reply\n\nYour last reply on this task held no usable program (" +
         last_unusable +
         "). This time return the whole program in one fenced ```cuda block that defines every "
         "symbol of the program ABI above, complete to its last line.";
}

}  // namespace

Result<CodeOutcome> LlmCoder::write(const CodeRequest& request) {
  return write_sample(request, -1);
}

std::vector<Result<CodeOutcome>> LlmCoder::write_samples(const std::vector<CodeRequest>& requests) {
  std::vector<Result<CodeOutcome>> outcomes(requests.size(), make_error("sample not written"));
  std::vector<std::thread> threads;
  threads.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    threads.emplace_back([&, i] { outcomes[i] = write_sample(requests[i], static_cast<int>(i)); });
  for (std::thread& thread : threads)
    thread.join();
  return outcomes;
}

Result<CodeOutcome> LlmCoder::write_sample(const CodeRequest& request, int sample) {
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
  STITCH_ASSIGN_OR_RETURN(llm::RenderedPrompt prompt,
                          coder_prompt(task, previous, options_.search_docs));

  llm::ChatRequest chat = llm::request_for_role(options_.role);
  chat.messages = llm::prompt_messages(prompt);
  if (request.last_unusable && !chat.messages.empty())
    chat.messages.back().content += unusable_note(*request.last_unusable);
  chat.label = "coder";
  if (sample >= 0) {  // samples differ, yet a replay gets the same answers
    chat.seed = chat.seed.value_or(0) + sample;
    chat.label = fmt::format("coder-sample-{:02}", sample);
  }
  STITCH_TRY(make_dirs(request.out_dir));
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<llm::ChatClient> client,
                          make_client_(options_.role.endpoint, attempt_dir));
  // With a documentation index the model may look things up (search_cuda_docs) before answering.
  std::optional<llm::ToolLoopClient> with_docs;
  if (options_.search_docs)
    with_docs.emplace(*client, std::vector{documentation_tool(options_.search_docs)});
  llm::ChatClient& asked = with_docs ? static_cast<llm::ChatClient&>(*with_docs) : *client;
  STITCH_ASSIGN_OR_RETURN(llm::ProgramExchange exchange,
                          llm::ask_for_program(asked, std::move(chat)));
  json record =
      llm::program_exchange_record(exchange, enum_name(skill), options_.role, options_.prices);
  if (with_docs) record["tool_calls"] = tool_calls_json(with_docs->calls());
  STITCH_TRY(write_file_atomic(attempt_dir / kLlmCoderRecord, record.dump(2) + "\n"));

  const llm::Usage usage = exchange.usage();
  CodeOutcome outcome;
  if (exchange.extraction.outcome != llm::StepOutcome::usable) {
    outcome.why_not = exchange.extraction.failure.message();
    outcome.no_usable_output = true;
    outcome.tokens = usage.prompt_tokens + usage.completion_tokens;
    return outcome;
  }
  const std::filesystem::path source = request.out_dir / kProgramFile;
  STITCH_TRY(write_file_atomic(source, exchange.extraction.source));
  CodeDraft draft;
  draft.sources = {source};
  draft.libraries = program_link_libraries({}, draft.sources, options_.include_dirs);
  draft.tokens = usage.prompt_tokens + usage.completion_tokens;
  draft.label = fmt::format("llm {}: {}", enum_name(skill), options_.role.model);
  outcome.draft = std::move(draft);
  return outcome;
}

}  // namespace stitch::agents
