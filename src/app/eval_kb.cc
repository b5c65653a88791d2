// `eval-kb` (eval_kb.h).
#include "app/eval_kb.h"

#include <fmt/format.h>

#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/judge/judge_client.h"
#include "verify/track.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;

Status check_python_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return make_error(ErrorKind::bad_input, "{}: no such file", path);
  if (!fs::is_regular_file(path, ec))
    return make_error(ErrorKind::bad_input, "{}: not a file", path);
  if (fs::path(path).extension() != ".py")
    return make_error(ErrorKind::bad_input, "{}: not a {} (.py)", path, what);
  return {};
}

std::string last_lines(const std::string& text, size_t count) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  std::string joined;
  for (size_t i = lines.size() > count ? lines.size() - count : 0; i < lines.size(); ++i)
    joined += (joined.empty() ? "" : " | ") + lines[i];
  return joined;
}

ProcessSpec judge_spec(const EvalKbOptions& options, const harness::HarnessLocation& location,
                       const fs::path& result_path) {
  ProcessSpec spec = python_module_spec(
      {location.python, location.python_dir}, "stitch_harness.eval_kb",
      {fs::absolute(options.task).string(), fs::absolute(options.solution).string(), "--out",
       fs::absolute(result_path).string(), "--track", options.track, "--trials",
       std::to_string(options.trials), "--iters", std::to_string(options.iters), "--device",
       options.device, "--timeout", fmt::format("{}", options.timeout_s)});
  // The candidate's limit is enforced inside; this one covers the reference and the eager
  // baseline too, and catches a judge that hangs.
  spec.timeout_s = options.timeout_s + 1800;
  return spec;
}

// Runs the judge on what is in `attempt` and reads its eval_kb.json.
Result<EvalKbResult> run_judge(const EvalKbOptions& options,
                               const harness::HarnessLocation& location, run::RunDir& run,
                               const fs::path& attempt) {
  const fs::path result_path = attempt / "eval_kb.json";
  (void)run.events().append("eval_kb.start", {{"task", fs::absolute(options.task).string()},
                                              {"solution", fs::absolute(options.solution).string()},
                                              {"track", options.track},
                                              {"device", options.device}});
  say(options.progress, fmt::format("evaluating {} on {} → {}", options.solution, options.task,
                                    attempt.string()));
  SystemProcessRunner process_runner;
  STITCH_ASSIGN_OR_RETURN(ProcessResult process,
                          process_runner.run(judge_spec(options, location, result_path)));
  (void)write_file_atomic(attempt / "eval_kb.log", process.stdout_text + process.stderr_text);
  std::error_code ec;
  if (!process.succeeded() || !fs::is_regular_file(result_path, ec))
    return make_error("eval-kb {}: {}", process.describe(), last_lines(process.stderr_text, 3));
  auto text = read_file(result_path);
  nlohmann::json result =
      text.ok() ? nlohmann::json::parse(*text, nullptr, false) : nlohmann::json();
  if (!result.is_object() || !result.contains("outcome"))
    return make_error("{}: not an eval-kb result", result_path.string());
  return EvalKbResult{std::move(result), result_path};
}

}  // namespace

Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options) {
  STITCH_TRY(check_python_file(options.task, "task"));
  STITCH_TRY(check_python_file(options.solution, "solution"));
  if (!enum_from_name<Track>(options.track))
    return make_error(ErrorKind::bad_input, "unknown track '{}' (fp32, tf32, bf16)", options.track);
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(options.runs_dir,
                                              run::task_name_from_path(options.task)));
  STITCH_ASSIGN_OR_RETURN(fs::path attempt, run.new_attempt_dir());
  STITCH_ASSIGN_OR_RETURN(std::string task_text, read_file(options.task));
  STITCH_ASSIGN_OR_RETURN(std::string solution_text, read_file(options.solution));
  (void)run.write_text("task.py", task_text);
  (void)write_file_atomic(attempt / "solution.py", solution_text);

  auto judged = run_judge(options, location, run, attempt);
  if (!judged.ok()) {
    (void)run.events().append("eval_kb.failed", {{"message", judged.error().message}});
    (void)run.set_status(run::RunStatus::failed,
                         {{"stage", "eval-kb"}, {"message", judged.error().message}});
    return judged.error();
  }
  const std::string outcome = judged->result.value("outcome", std::string());
  (void)run.events().append("eval_kb.done",
                            {{"attempt", attempt.filename().string()},
                             {"outcome", outcome},
                             {"reason", judged->result.value("reason", std::string())}});
  (void)run.set_status(
      run::RunStatus::complete,
      {{"stage", "eval-kb"}, {"attempt", attempt.filename().string()}, {"outcome", outcome}});
  return judged;
}

}  // namespace stitch::app
