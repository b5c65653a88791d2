// `eval-kb` (eval_kb.h).
#include "app/eval_kb.h"

#include <fmt/format.h>

#include "run/run_dir.h"
#include "util/fs.h"
#include "util/process.h"
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
  if (!parse_track(options.track))
    return make_error(ErrorKind::bad_input, "unknown track '{}' (fp32, tf32, bf16)", options.track);
  return {};
}

harness::EvalKbRequest judge_request(const EvalKbOptions& options, const fs::path& attempt) {
  harness::EvalKbRequest request;
  request.task = fs::absolute(options.task);
  request.solution = fs::absolute(options.solution);
  request.out = fs::absolute(attempt / "eval_kb.json");
  request.log = attempt / "eval_kb.log";
  request.track = options.track;
  request.trials = options.trials;
  request.iters = options.iters;
  request.device = options.device;
  request.timeout_s = options.timeout_s;
  return request;
}

}  // namespace

Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options,
                                          harness::KernelBenchJudge& judge) {
  STITCH_TRY(check_inputs(options));
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(options.runs_dir,
                                              run::task_name_from_path(options.task)));
  STITCH_ASSIGN_OR_RETURN(fs::path attempt, run.new_attempt_dir());
  STITCH_ASSIGN_OR_RETURN(std::string task_text, read_file(options.task));
  STITCH_ASSIGN_OR_RETURN(std::string solution_text, read_file(options.solution));
  (void)run.write_text("task.py", task_text);
  (void)write_file_atomic(attempt / "solution.py", solution_text);

  const harness::EvalKbRequest request = judge_request(options, attempt);
  (void)run.events().append("eval_kb.start", {{"task", request.task.string()},
                                              {"solution", request.solution.string()},
                                              {"track", options.track},
                                              {"device", options.device}});
  say(options.progress,
      fmt::format("evaluating {} on {} → {}", options.solution, options.task, attempt.string()));
  auto judged = judge.evaluate(request);
  if (!judged.ok()) {
    (void)run.events().append("eval_kb.failed", {{"message", judged.error().message}});
    (void)run.set_status(run::RunStatus::failed,
                         {{"stage", "eval-kb"}, {"message", judged.error().message}});
    return judged.error();
  }
  const std::string_view outcome = outcome_name(judged->outcome);
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
  harness::PythonKernelBenchJudge judge(location, process_runner);
  return evaluate_kernelbench(options, judge);
}

}  // namespace stitch::app
