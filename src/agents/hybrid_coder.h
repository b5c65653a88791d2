// The hybrid Coder (`--coder hybrid`): the built-in program is the starting point and an LLM writes
// exactly the subtasks the built-in Coder refuses (opaque subtasks: the Planner keeps uncovered
// ops whole, PlanOptions::keep_uncovered) or runs slowest (the `hot` hottest subtasks by the
// profile of an earlier attempt, when there is one) — subtask-level coding:
//   1. each such subtask gets a signature (codegen/subtask_signature.h) and one prompt
//      (prompts/coder_subtask.md: skill 1, or skill 2 with the subtask's previous code and the
//      last attempt's feedback); the reply's fragment must define the signature's function;
//   2. the fragment is checked alone (SubtaskChecker: the subtask's own program, from its subgraph,
//      through the hardened Verifier against the subgraph's reference outputs) where its own
//      program hands it the same operands;
//   3. every LLM fragment is stitched into the built-in program (one program.cu), which the loop's
//      Verifier then checks whole. A fragment that failed alone is stitched all the same, so the
//      attempt gets the whole program's verdict and feedback — the reason it fails feeds back.
// The attempt records which subtask came from whom (hybrid.json beside verify.json: builtin or
// llm, why, model, tokens, the check alone); src/<subtask>.cu keeps each fragment.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/llm_coder.h"
#include "codegen/program_emitter.h"
#include "plan/plan.h"

namespace stitch::agents {

// One LLM fragment's check alone: its own program (sources in `dir`/src) and the subgraph task
// (`task_file`) it is judged against.
struct SubtaskCheckRequest {
  std::filesystem::path dir;        // <attempt>/subtasks/<id>/: everything the check writes
  std::filesystem::path task_file;  // <dir>/task.py
  CodeDraft draft;                  // the subtask's own program
};

class SubtaskChecker {
 public:
  virtual ~SubtaskChecker() = default;
  // The verdict of the subtask's own program (verify.json in request.dir); an Error only when the
  // machinery fails (the subgraph task does not capture).
  virtual Result<AttemptResult> check(const SubtaskCheckRequest& request) = 0;
};

struct HybridCoderOptions {
  LlmCoderOptions llm;
  int hot = 1;  // built-in subtasks handed to the LLM by profile (0: opaque ones only)
  std::vector<std::filesystem::path> include_dirs;
};

class HybridCoder final : public Coder {
 public:
  // `checker` may be null: fragments are then checked only within the whole program.
  HybridCoder(HybridCoderOptions options, ChatClientFactory make_client, SubtaskChecker* checker)
      : options_(std::move(options)), make_client_(std::move(make_client)), checker_(checker) {}
  CoderGranularity granularity() const override { return CoderGranularity::whole_program; }
  Result<CodeOutcome> write(const CodeRequest& request) override;

 private:
  struct Step;  // one LLM subtask of one write (hybrid_coder.cc)
  Result<std::string> ask(const Step& step, llm::ChatClient& client, nlohmann::json& record);
  nlohmann::json check_alone(const Step& step, const std::string& code);

  HybridCoderOptions options_;
  ChatClientFactory make_client_;
  SubtaskChecker* checker_;
};

// Which subtasks go to the LLM and why: every opaque one, then the `hot` slowest others whose
// kernels `profile` attributes to them by name (the functors carry the subtask id).
struct LlmSubtaskChoice {
  int index = -1;  // into plan.subtasks
  std::string why;
};
std::vector<LlmSubtaskChoice> choose_llm_subtasks(const plan::Plan& plan,
                                                  const std::optional<ProfileSummary>& profile,
                                                  int hot);

// The newest profile.json among run_dir/attempts/*/; nullopt when none reads.
std::optional<ProfileSummary> latest_profile(const std::filesystem::path& run_dir);

// The record of which subtask came from whom (hybrid.json in an attempt directory).
inline constexpr std::string_view kHybridRecord = "hybrid.json";
// subtask id → "builtin" | "llm", read back from an attempt's hybrid.json (empty when none).
std::vector<std::pair<std::string, std::string>> read_subtask_sources(
    const std::filesystem::path& attempt_dir);

}  // namespace stitch::agents
