#include "dataset/dataset.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "agents/attempt_files.h"
#include "agents/llm_context.h"
#include "util/enum_names.h"
#include "util/fs.h"
#include "verify/build/build_cache.h"
#include "verify/feedback.h"

namespace stitch::dataset {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::array<std::string_view, 2> kSkillNames = {"generate", "improve"};

constexpr std::string_view kSystemGenerate =
    "You are an expert CUDA engineer. Given a PyTorch program (a KernelBench task: Model, "
    "get_inputs, get_init_inputs) and a plan of subtasks, write a complete CUDA C++ program that "
    "computes the same outputs faster. Do the work in your own kernels; do not call back into "
    "PyTorch or copy the reference. Reply with the program in one ```cuda code block.";
constexpr std::string_view kSystemImprove =
    "You are an expert CUDA engineer. Given a CUDA program for a PyTorch task and the verifier's "
    "feedback on it (compile errors, wrong outputs, findings, timing, a suggestion), write an "
    "improved program that fixes what the feedback names and keeps what works. Do not call back "
    "into PyTorch or copy the reference. Reply with the whole program in one ```cuda code block.";

// One attempt directory as the samples need it.
struct AttemptInfo {
  agents::AttemptRecord record;
  fs::path dir;
  std::optional<std::string> program;   // the draft's sources and headers, each under its name
  std::optional<std::string> feedback;  // feedback.json as a model reads it
  std::optional<std::string> outcome;   // result.json's verdict
};

Result<std::string> program_text(const fs::path& attempt_dir) {
  STITCH_ASSIGN_OR_RETURN(agents::CodeDraft draft, agents::read_draft(attempt_dir));
  std::string text;
  std::vector<fs::path> files = draft.headers;
  files.insert(files.end(), draft.sources.begin(), draft.sources.end());
  for (const fs::path& file : files) {
    STITCH_ASSIGN_OR_RETURN(std::string body, read_file(file));
    text += fmt::format("// ---- {}\n{}{}", file.filename().string(), body,
                        body.ends_with('\n') ? "" : "\n");
  }
  return text;
}

Result<AttemptInfo> read_attempt(const fs::path& dir) {
  AttemptInfo info;
  info.dir = dir;
  STITCH_ASSIGN_OR_RETURN(
      info.record, read_json_file_as(dir / "attempt.json", agents::attempt_intent_from_json));
  if (fs::exists(dir / "draft.json")) {
    STITCH_ASSIGN_OR_RETURN(info.program, program_text(dir));
  }
  if (fs::exists(dir / "feedback.json")) {
    STITCH_ASSIGN_OR_RETURN(Feedback feedback, read_feedback(dir / "feedback.json"));
    info.feedback = agents::describe_feedback(feedback);
  }
  if (fs::exists(dir / "result.json")) {
    STITCH_ASSIGN_OR_RETURN(
        agents::FinishedAttempt finished,
        read_json_file_as(dir / "result.json", agents::finished_attempt_from_json));
    info.outcome = std::string(finished.result.verdict_name());
  }
  return info;
}

std::string scope_line(const agents::AttemptRecord& record) {
  if (record.kind == agents::AttemptKind::subtask)
    return fmt::format("Write the program for subtask {} of the plan (index from 0) alone.",
                       record.subtask);
  return "Write the whole program: every subtask of the plan, integrated.";
}

std::string generate_prompt(const std::string& task_source, const std::string& plan,
                            const agents::AttemptRecord& record) {
  std::string user = fmt::format("## Task (PyTorch)\n```python\n{}```\n", task_source);
  if (!plan.empty()) user += fmt::format("\n## Plan\n```json\n{}\n```\n", plan);
  return user + "\n" + scope_line(record) + "\n";
}

std::string improve_prompt(const std::string& task_source, const AttemptInfo& previous) {
  return fmt::format(
      "## Task (PyTorch)\n```python\n{}```\n\n## Program\n```cuda\n{}```\n\n## "
      "Feedback\n{}\n\n{}\n",
      task_source, *previous.program, *previous.feedback,
      previous.record.kind == agents::AttemptKind::subtask
          ? fmt::format("Write the improved program for subtask {}.", previous.record.subtask)
          : std::string("Write the improved whole program."));
}

Result<std::vector<AttemptInfo>> read_attempts(const fs::path& run_dir) {
  std::vector<AttemptInfo> attempts;
  const fs::path root = run_dir / "attempts";
  if (!fs::is_directory(root)) return attempts;
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    if (!entry.is_directory() || !fs::exists(entry.path() / "attempt.json")) continue;
    auto info = read_attempt(entry.path());
    if (!info.ok())
      return make_error(ErrorKind::bad_input, "{}: {}", entry.path().string(),
                        info.error().message);
    attempts.push_back(std::move(*info));
  }
  std::ranges::sort(attempts, {}, [](const AttemptInfo& a) { return a.record.number; });
  return attempts;
}

std::string task_id_of(const fs::path& run_dir) {
  auto state = read_json_file(run_dir / "state.json");
  if (state.ok() && state->is_object() && state->value("task", json()).is_string() &&
      !state->at("task").get<std::string>().empty())
    return state->at("task").get<std::string>();
  return fs::absolute(run_dir).lexically_normal().filename().string();
}

}  // namespace

std::string_view skill_name(Skill skill) {
  return enum_name(kSkillNames, skill);
}

Result<std::vector<Sample>> samples_from_run(const fs::path& run_dir) {
  const fs::path task_file = run_dir / "task.py";
  auto task_source = read_file(task_file);
  if (!task_source.ok())
    return make_error(ErrorKind::bad_input, "{}: not a run directory (no task.py)",
                      run_dir.string());
  std::string plan;
  if (fs::exists(run_dir / "plan.json")) {
    STITCH_ASSIGN_OR_RETURN(json doc, read_json_file(run_dir / "plan.json"));
    plan = doc.dump(1);
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<AttemptInfo> attempts, read_attempts(run_dir));
  const std::string task_id = task_id_of(run_dir);
  // (plan version, kind, subtask) → the latest attempt of that scope with a program and feedback.
  std::map<std::tuple<int, int, int>, const AttemptInfo*> last_with_feedback;
  std::vector<Sample> samples;
  for (const AttemptInfo& info : attempts) {
    const agents::AttemptRecord& r = info.record;
    if (r.kind == agents::AttemptKind::refine) continue;
    const auto scope = std::tuple(r.plan_version, static_cast<int>(r.kind), r.subtask);
    Sample sample;
    sample.task_id = task_id;
    sample.task_path = fs::absolute(task_file).lexically_normal().string();
    sample.run_dir = fs::absolute(run_dir).lexically_normal().string();
    sample.attempt = r.number;
    sample.reference_outcome = info.outcome;
    if (auto found = last_with_feedback.find(scope); found != last_with_feedback.end()) {
      sample.skill = Skill::improve;
      sample.system = kSystemImprove;
      sample.user = improve_prompt(*task_source, *found->second);
    } else {
      sample.skill = Skill::generate;
      sample.system = kSystemGenerate;
      sample.user = generate_prompt(*task_source, plan, r);
    }
    samples.push_back(std::move(sample));
    if (info.program && info.feedback) last_with_feedback[scope] = &info;
  }
  return samples;
}

std::string prompt_hash(const Sample& sample) {
  const json key = {skill_name(sample.skill), sample.system, sample.user};
  return sha256_hex(key.dump());
}

std::vector<Sample> deduplicate(std::vector<Sample> samples, int* removed) {
  std::set<std::string> seen;
  std::vector<Sample> kept;
  for (Sample& sample : samples)
    if (seen.insert(prompt_hash(sample)).second) kept.push_back(std::move(sample));
  if (removed) *removed = static_cast<int>(samples.size() - kept.size());
  return kept;
}

bool in_validation(std::string_view task_id, double val_fraction) {
  const uint64_t bits = std::stoull(sha256_hex(task_id).substr(0, 8), nullptr, 16);
  return static_cast<double>(bits) / 4294967296.0 < val_fraction;
}

json sample_to_record(const Sample& sample) {
  const std::string skill(skill_name(sample.skill));
  json extra = {{"task_id", sample.task_id},
                {"task_path", sample.task_path},
                {"skill", skill},
                {"attempt", sample.attempt},
                {"run_dir", sample.run_dir},
                {"reference_outcome",
                 sample.reference_outcome ? json(*sample.reference_outcome) : json(nullptr)},
                {"prompt_hash", prompt_hash(sample)}};
  return {{"data_source", "stitchcuda/" + skill},
          {"prompt", json::array({{{"role", "system"}, {"content", sample.system}},
                                  {{"role", "user"}, {"content", sample.user}}})},
          {"ability", "cuda"},
          {"reward_model", {{"style", "rule"}, {"ground_truth", sample.task_id}}},
          {"extra_info", std::move(extra)}};
}

}  // namespace stitch::dataset
