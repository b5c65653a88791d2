// `eval-kb` (eval_kb.h).
#include "app/eval_kb.h"

#include <fmt/format.h>

#include "run/run_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/judge/judge_client.h"  // python_module_spec
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

Status check_inputs(const EvalKbOptions& options) {
  STITCH_TRY(check_python_file(options.task, "task"));
  STITCH_TRY(check_python_file(options.solution, "solution"));
  if (!enum_from_name<Track>(options.judging.track))
    return make_error(ErrorKind::bad_input, "unknown track '{}' (fp32, tf32, bf16)",
                      options.judging.track);
  return {};
}

// The last `count` non-empty lines of `text`, joined by " | ": a failed judge's last words.
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

}  // namespace

Result<harness::EvalKbReport> PythonKernelBenchJudge::evaluate(const EvalKbRequest& request) {
  const EvalKbJudging& judging = request.judging;
  ProcessSpec spec = python_module_spec(
      {location_.python, location_.python_dir}, "stitch_harness.eval_kb",
      {request.task.string(), request.solution.string(), "--out", request.out.string(), "--track",
       judging.track, "--trials", std::to_string(judging.trials), "--iters",
       std::to_string(judging.iters), "--device", judging.device, "--timeout",
       fmt::format("{}", judging.timeout_s)});
  // The candidate's limit is enforced inside; this one covers the reference and the eager
  // baseline too, and catches a judge that hangs.
  spec.timeout_s = task_timeout_s(judging.timeout_s + 1800);
  STITCH_ASSIGN_OR_RETURN(ProcessResult process, runner_.run(spec));
  if (!request.log.empty())
    (void)write_file_atomic(request.log, process.stdout_text + process.stderr_text);
  std::error_code ec;
  if (!process.succeeded() || !fs::is_regular_file(request.out, ec))
    return make_error("eval-kb {}: {}", process.describe(), last_lines(process.stderr_text, 3));
  auto report = harness::read_eval_kb_report(request.out);
  if (!report.ok()) return report.error().with_kind(ErrorKind::work_failed);
  return report;
}

Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options, KernelBenchJudge& judge) {
  STITCH_TRY(check_inputs(options));
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(options.runs_dir,
                                              run::task_name_from_path(options.task)));
  STITCH_ASSIGN_OR_RETURN(fs::path attempt, run.new_attempt_dir());
  STITCH_ASSIGN_OR_RETURN(std::string task_text, read_file(options.task));
  STITCH_ASSIGN_OR_RETURN(std::string solution_text, read_file(options.solution));
  (void)run.write_text("task.py", task_text);
  (void)write_file_atomic(attempt / "solution.py", solution_text);

  const EvalKbRequest request{fs::absolute(options.task), fs::absolute(options.solution),
                              fs::absolute(attempt / "eval_kb.json"), attempt / "eval_kb.log",
                              options.judging};
  (void)run.events().append("eval_kb.start", {{"task", request.task.string()},
                                              {"solution", request.solution.string()},
                                              {"track", options.judging.track},
                                              {"device", options.judging.device}});
  say(options.progress,
      fmt::format("evaluating {} on {} → {}", options.solution, options.task, attempt.string()));
  auto judged = judge.evaluate(request);
  if (!judged.ok()) {
    (void)run.events().append("eval_kb.failed", {{"message", judged.error().message}});
    (void)run.set_status(run::RunStatus::failed,
                         {{"stage", "eval-kb"}, {"message", judged.error().message}});
    return judged.error();
  }
  const std::string_view outcome = enum_name(judged->outcome);
  (void)run.events().append(
      "eval_kb.done",
      {{"attempt", attempt.filename().string()}, {"outcome", outcome}, {"reason", judged->reason}});
  (void)run.set_status(
      run::RunStatus::complete,
      {{"stage", "eval-kb"}, {"attempt", attempt.filename().string()}, {"outcome", outcome}});
  return EvalKbResult{std::move(*judged), attempt / "eval_kb.json"};
}

Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options) {
  STITCH_TRY(check_inputs(options));  // before looking for the harness
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  SystemProcessRunner process_runner;
  PythonKernelBenchJudge judge(location, process_runner);
  return evaluate_kernelbench(options, judge);
}

}  // namespace stitch::app
