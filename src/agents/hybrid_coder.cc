// The hybrid Coder (hybrid_coder.h).
#include "agents/hybrid_coder.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "agents/hybrid_subtask.h"
#include "agents/llm_context.h"
#include "llm/prices.h"
#include "llm/prompt_template.h"
#include "plan/plan_json.h"
#include "util/fs.h"
#include "verify/verifier.h"

namespace stitch::agents {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The last attempt, when the request carries its feedback: a retry revises its fragments.
struct PreviousAttempt {
  fs::path dir;
  Feedback feedback;
};

std::optional<PreviousAttempt> previous_attempt(const CodeRequest& request) {
  if (!request.feedback) return std::nullopt;
  auto feedback = read_feedback(*request.feedback);
  if (!feedback.ok()) return std::nullopt;
  return PreviousAttempt{request.feedback->parent_path(), std::move(*feedback)};
}

}  // namespace

std::vector<LlmSubtaskChoice> choose_llm_subtasks(const plan::Plan& plan,
                                                  const std::optional<ProfileSummary>& profile,
                                                  int hot) {
  std::vector<LlmSubtaskChoice> choices;
  for (size_t i = 0; i < plan.subtasks.size(); ++i)
    if (const auto* opaque = std::get_if<plan::OpaqueSpec>(&plan.subtasks[i].spec))
      choices.push_back({static_cast<int>(i), "opaque: " + opaque->reason});
  if (!profile || hot <= 0) return choices;
  std::vector<ProfiledKernel> kernels = profile->kernels;
  double total = 0;
  for (const ProfiledKernel& kernel : kernels)
    total += kernel.duration_ms;
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const auto& a, const auto& b) { return a.duration_ms > b.duration_ms; });
  int taken = 0;
  for (const ProfiledKernel& kernel : kernels) {
    for (size_t i = 0; i < plan.subtasks.size() && taken < hot; ++i) {
      const plan::Subtask& subtask = plan.subtasks[i];
      const bool chosen = std::any_of(choices.begin(), choices.end(), [&](const auto& c) {
        return c.index == static_cast<int>(i);
      });
      if (chosen || kernel.name.find(subtask.id) == std::string::npos) continue;
      const double share = total > 0 ? 100 * kernel.duration_ms / total : 0;
      choices.push_back({static_cast<int>(i), fmt::format("hot: kernel {} took {:.0f}% of the "
                                                          "profiled forward",
                                                          kernel.name, share)});
      ++taken;
    }
  }
  std::sort(choices.begin(), choices.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  return choices;
}

std::optional<ProfileSummary> latest_profile(const fs::path& run_dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir / "attempts", ec))
    if (fs::exists(entry.path() / "profile.json", ec))
      files.push_back(entry.path() / "profile.json");
  std::sort(files.begin(), files.end());
  for (auto it = files.rbegin(); it != files.rend(); ++it)
    if (auto profile = read_profile_summary(*it); profile.ok()) return std::move(*profile);
  return std::nullopt;
}

std::vector<std::pair<std::string, std::string>> read_subtask_sources(const fs::path& attempt_dir) {
  std::vector<std::pair<std::string, std::string>> sources;
  auto text = read_file(attempt_dir / kHybridRecord);
  if (!text.ok()) return sources;
  const json doc = json::parse(*text, nullptr, false);
  if (!doc.is_object() || !doc.contains("subtasks") || !doc["subtasks"].is_array()) return sources;
  for (const json& row : doc["subtasks"])
    if (row.is_object() && row.value("id", "") != "")
      sources.emplace_back(row.value("id", ""), row.value("from", ""));
  return sources;
}

}  // namespace stitch::agents

namespace stitch::agents {

struct HybridCoder::Step {
  const CodeRequest& request;
  const plan::Plan& plan;
  const plan::Subtask& subtask;
  const codegen::SubtaskSignature& signature;
  const PromptTask& task;
  const LlmSubtaskChoice& choice;
  const std::optional<PreviousAttempt>& previous;
  const codegen::EmitOptions& emit;
};

namespace {

// The prompt's revision section: the subtask's previous fragment and the last attempt's feedback
// (skill 2), or nothing on a first attempt (skill 1).
std::string revision_text(const std::optional<PreviousAttempt>& previous, const std::string& id,
                          bool& revise) {
  revise = false;
  if (!previous) return "";
  auto code = read_file(previous->dir / "src" / (id + ".cu"));
  if (!code.ok()) return "";
  revise = true;
  return fmt::format(
      "## Your previous version, and what the Verifier said about the program it was part of\n\n"
      "```cuda\n{}\n```\n\n{}\n\nRevise it: fix what the feedback names.",
      *code, describe_feedback(previous->feedback));
}

}  // namespace

Result<std::string> HybridCoder::ask(const Step& step, llm::ChatClient& client, json& record) {
  bool revise = false;
  const std::string revision = revision_text(step.previous, step.subtask.id, revise);
  llm::PromptValues values = {
      {"task_source", step.task.task_source},
      {"gpu_facts", describe_gpu(step.task.gpu, step.task.arch)},
      {"precision", describe_precision(step.task.track)},
      {"subtask_id", step.subtask.id},
      {"why", step.choice.why},
      {"signature", codegen::describe_signature(step.plan, step.subtask, step.signature)},
      {"revision", revision}};
  STITCH_ASSIGN_OR_RETURN(llm::RenderedPrompt prompt, llm::render_prompt("coder_subtask", values));
  llm::ChatRequest chat = llm::request_for_role(options_.llm.role);
  chat.messages = llm::prompt_messages(prompt);
  STITCH_ASSIGN_OR_RETURN(FragmentExchange exchange,
                          ask_for_fragment(client, std::move(chat), step.signature));
  const llm::Usage usage = exchange.usage();
  const std::optional<double> cost =
      llm::cost_usd(options_.llm.prices, options_.llm.role.model, usage);
  record["skill"] = revise ? "revise" : "generate";
  record["model"] = options_.llm.role.model;
  record["replies"] = exchange.replies.size();
  record["prompt_tokens"] = usage.prompt_tokens;
  record["completion_tokens"] = usage.completion_tokens;
  record["cost_usd"] = cost ? json(*cost) : json(nullptr);
  record["outcome"] = exchange.code.empty() ? "no_usable_output" : "usable";
  if (exchange.code.empty()) record["reason"] = exchange.why_not;
  return exchange.code;
}

json HybridCoder::check_alone(const Step& step, const std::string& code) {
  if (checker_ == nullptr) return {{"checked", false}, {"why", "no subtask checker"}};
  const codegen::LlmSubtaskCode fragment{step.signature.function, code};
  auto own = own_program(step.plan, step.subtask, fragment, step.emit);
  if (!own.ok()) return {{"checked", false}, {"why", own.error().message}};
  if (const auto* why = std::get_if<std::string>(&*own)) return {{"checked", false}, {"why", *why}};
  const OwnProgram& program = std::get<OwnProgram>(*own);
  const fs::path dir = step.request.out_dir.parent_path() / "subtasks" / step.subtask.id;
  SubtaskCheckRequest check{dir, dir / "task.py", {}};
  const fs::path source = dir / "src" / "program.cu";
  Status written = make_dirs(dir / "src");
  if (written.ok()) written = write_file_atomic(check.task_file, program.task_source);
  if (written.ok()) written = write_file_atomic(source, program.program.source);
  if (!written.ok()) return {{"checked", false}, {"why", written.error().message}};
  check.draft.sources = {source};
  check.draft.libraries =
      program_link_libraries(program.program.libraries, check.draft.sources, options_.include_dirs);
  check.draft.label = "subtask " + step.subtask.id + " alone";
  auto result = checker_->check(check);
  if (!result.ok()) return {{"checked", false}, {"why", result.error().message}};
  return {{"checked", true},
          {"verdict", std::string(result->verdict_name())},
          {"passed", result->passed()},
          {"reason", result->reason},
          {"dir", fs::relative(dir, step.request.out_dir.parent_path()).string()}};
}

Result<CodeOutcome> HybridCoder::write(const CodeRequest& request) {
  STITCH_ASSIGN_OR_RETURN(plan::Plan plan, plan::load_plan(request.plan_file.string()));
  STITCH_ASSIGN_OR_RETURN(PromptTask task,
                          load_prompt_task(request.run_dir, std::nullopt, options_.llm.gpu,
                                           options_.llm.arch, options_.llm.track));
  const std::vector<LlmSubtaskChoice> choices =
      choose_llm_subtasks(plan, latest_profile(request.run_dir), options_.hot);
  const std::optional<PreviousAttempt> previous = previous_attempt(request);
  const fs::path attempt_dir = request.out_dir.parent_path();
  STITCH_TRY(make_dirs(request.out_dir));
  // LLM code runs outside CUDA graph capture, which forbids what honest code may do (create a
  // stream or handle, allocate) and would hide unjoined side-stream work from the runner.
  codegen::EmitOptions emit;
  emit.cuda_graph = false;
  std::map<std::string, json> rows;
  std::unique_ptr<llm::ChatClient> client;
  if (!choices.empty()) {
    STITCH_ASSIGN_OR_RETURN(client, make_client_(options_.llm.role.endpoint, attempt_dir));
  }
  CodeOutcome outcome;
  int64_t tokens = 0;
  for (const LlmSubtaskChoice& choice : choices) {
    const plan::Subtask& subtask = plan.subtasks[choice.index];
    STITCH_ASSIGN_OR_RETURN(codegen::SubtaskSignature signature,
                            codegen::subtask_signature(plan, subtask));
    const Step step{request, plan, subtask, signature, task, choice, previous, emit};
    json& row = rows[subtask.id];
    row = {{"id", subtask.id},
           {"from", "llm"},
           {"why", choice.why},
           {"signature", signature.declaration()}};
    STITCH_ASSIGN_OR_RETURN(std::string code, ask(step, *client, row));
    tokens += row.value("prompt_tokens", int64_t{0}) + row.value("completion_tokens", int64_t{0});
    if (code.empty()) {
      outcome.why_not = fmt::format("no_usable_output: no fragment for subtask {}: {}", subtask.id,
                                    row.value("reason", std::string()));
      break;
    }
    STITCH_TRY(write_file_atomic(request.out_dir / (subtask.id + ".cu"), code));
    row["source"] = "src/" + subtask.id + ".cu";
    row["alone"] = check_alone(step, code);
    emit.llm_subtasks[subtask.id] = {signature.function, code};
  }
  json record = {{"format", "stitchcuda.hybrid"}, {"version", 1}, {"subtasks", json::array()}};
  for (const plan::Subtask& subtask : plan.subtasks) {
    auto found = rows.find(subtask.id);
    record["subtasks"].push_back(
        found != rows.end()
            ? found->second
            : json{{"id", subtask.id}, {"from", "builtin"}, {"kernel", subtask.kernel}});
  }
  STITCH_TRY(write_file_atomic(attempt_dir / kHybridRecord, record.dump(2) + "\n"));
  if (!outcome.why_not.empty()) return outcome;
  auto program = codegen::emit_program(plan, emit);
  if (!program.ok()) {
    outcome.why_not = "the emitter refuses the plan: " + program.error().message;
    return outcome;
  }
  const fs::path source = request.out_dir / "program.cu";
  STITCH_TRY(write_file_atomic(source, program->source));
  CodeDraft draft;
  draft.sources = {source};
  draft.libraries =
      program_link_libraries(program->libraries, draft.sources, options_.include_dirs);
  draft.tokens = tokens;
  draft.label = fmt::format("hybrid: {} of {} subtasks by {}", emit.llm_subtasks.size(),
                            plan.subtasks.size(), options_.llm.role.model);
  outcome.draft = std::move(draft);
  return outcome;
}

}  // namespace stitch::agents
