// The Verifier's LLM analysis (llm_verifier.h).
#include "agents/llm_verifier.h"

#include <fmt/format.h>

#include "agents/llm_context.h"
#include "llm/json_reply.h"
#include "llm/program_reply.h"
#include "llm/prompt_template.h"
#include "util/fs.h"

namespace stitch::agents {

using nlohmann::json;

bool wants_analysis(const AttemptResult& result) {
  if (result.no_usable_output || result.state != VerifyState::verified || !result.outcome)
    return false;
  if (!result.passed()) return true;
  if (!result.timing) return false;
  for (const auto& [mode, ms] : result.baselines_ms)
    if (ms < result.timing->median_ms) return true;
  return false;
}

Result<AttemptResult> LlmAnalysingVerifier::verify(const VerifyJob& job) {
  STITCH_ASSIGN_OR_RETURN(AttemptResult result, verifier_.verify(job));
  if (!wants_analysis(result)) return result;
  if (Status analysed = analyse(job); !analysed.ok())
    STITCH_TRY(write_file_atomic(job.attempt_dir / "llm_verifier_error.txt",
                                 analysed.error().message + "\n"));
  return result;
}

Status LlmAnalysingVerifier::analyse(const VerifyJob& job) {
  STITCH_ASSIGN_OR_RETURN(Feedback feedback, read_feedback(job.attempt_dir / "feedback.json"));
  std::string program;
  if (job.draft != nullptr)
    for (const auto& source : job.draft->sources) {
      STITCH_ASSIGN_OR_RETURN(std::string text, read_file(source));
      program += text;
    }
  STITCH_ASSIGN_OR_RETURN(PromptTask task, load_prompt_task(job.run_dir, std::nullopt, options_.gpu,
                                                            options_.arch, options_.track));
  llm::PromptValues values = verifier_analysis_values(task, program, feedback);
  if (options_.search_docs)
    values["feedback"] += prefetched_documentation(options_.search_docs, feedback);
  STITCH_ASSIGN_OR_RETURN(llm::RenderedPrompt prompt,
                          llm::render_prompt("verifier_analysis", values));
  llm::ChatRequest chat = llm::request_for_role(options_.role);
  chat.messages = llm::prompt_messages(prompt);
  chat.response_schema = llm::verifier_analysis_schema();
  chat.label = "verifier";
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<llm::ChatClient> client,
                          make_client_(options_.role.endpoint, job.attempt_dir));
  STITCH_ASSIGN_OR_RETURN(llm::JsonExchange exchange,
                          llm::ask_json(*client, std::move(chat), [](const json& value) -> Status {
                            if (auto analysis = llm::verifier_analysis_from_json(value);
                                !analysis.ok())
                              return analysis.error();
                            return {};
                          }));
  const json record =
      llm::answer_exchange_record(exchange, "analysis", options_.role, options_.prices);
  STITCH_TRY(write_file_atomic(job.attempt_dir / kLlmVerifierRecord, record.dump(2) + "\n"));
  if (exchange.value)
    STITCH_TRY(write_verifier_analysis(job.attempt_dir / kAnalysisFile, *exchange.value));
  return {};
}

Status write_verifier_analysis(const std::filesystem::path& path, const json& answer) {
  return write_file_atomic(path, answer.dump(2) + "\n");
}

Result<llm::VerifierAnalysis> read_verifier_analysis(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return make_error("{}: not JSON", path.string());
  return llm::verifier_analysis_from_json(doc);
}

std::string describe_analysis(const llm::VerifierAnalysis& analysis) {
  std::string text = fmt::format(
      "## The Verifier's analysis\n\n- Bottleneck: **{}**{}\n", enum_name(analysis.bottleneck),
      analysis.kernel.empty() ? "" : fmt::format(" in `{}`", analysis.kernel));
  for (const std::string& evidence : analysis.evidence)
    text += "- Evidence: " + evidence + "\n";
  text += fmt::format("- Optimisation: {}\n- What to change: {}\n- Next step: {}\n",
                      analysis.optimisation, analysis.change, enum_name(analysis.next_step));
  return text;
}

}  // namespace stitch::agents
