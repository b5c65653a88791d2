// `run` (run.h).
#include "app/run.h"

#include <fmt/format.h>

#include "app/target.h"
#include "app/task_capture.h"
#include "harness/harness.h"
#include "util/process.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;

Status check_inputs(const RunTaskOptions& options) {
  if (options.task.empty() == options.resume.empty())
    return make_error(ErrorKind::bad_input,
                      "give a task (.py) or --resume RUN_DIR, not both or neither");
  return {};
}

Status check_target(const RunTaskOptions& options) {
  if (!options.task.empty()) {
    TargetRules rules;
    rules.run_dir = false;
    STITCH_TRY(classify_target(options.task, rules));
    return {};
  }
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(options.resume) / "state.json", ec))
    return make_error(ErrorKind::bad_input, "{}: not a run of the loop (no state.json)",
                      options.resume);
  return {};
}

}  // namespace

Result<RunTaskResult> run_task(const RunTaskOptions& options) {
  STITCH_TRY(check_inputs(options));
  STITCH_ASSIGN_OR_RETURN(LoopSettings settings, loop_settings(options.loop));
  STITCH_TRY(check_target(options));
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  Result<run::RunDir> run = make_error("unset");
  if (options.resume.empty()) {
    SystemProcessRunner process_runner;
    harness::PythonHarness torch_harness(location, process_runner);
    run = capture_task_into_new_run(options.task, options.runs_dir, torch_harness,
                                    options.on_line);
    if (!run.ok()) return run.error();
  } else {
    run = run::RunDir::open(options.resume);
    if (!run.ok()) return run.error().with_kind(ErrorKind::bad_input);
  }
  settings.build_cache = options.build_cache;
  settings.export_main = options.export_main;
  auto outcome = run_loop(
      *run, settings, !options.resume.empty(), location,
      [&](const agents::WorkflowEvent& event) { say(options.on_line, event.line); },
      options.on_status);
  if (!outcome.ok()) {
    if (!options.resume.empty()) return outcome.error();
    // What went wrong is saved: the run picks up where it stopped.
    return Error{fmt::format("{}\nthe run can be continued: stitchcuda run --resume {}",
                             outcome.error().message, run->root().string()),
                 outcome.error().kind};
  }
  return RunTaskResult{std::move(*outcome), run->root()};
}

}  // namespace stitch::app
