// `run` (run.h).
#include "app/run.h"

#include <fmt/format.h>

#include "agents/run_state.h"
#include "app/target.h"
#include "app/task_capture.h"
#include "harness/harness.h"
#include "util/fs.h"
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
  // A run whose capture was interrupted has no state.json yet, but its task.py.
  std::error_code ec;
  const fs::path root = options.resume;
  if (!fs::is_regular_file(root / "state.json", ec) && !fs::is_regular_file(root / "task.py", ec))
    return make_error(ErrorKind::bad_input, "{}: not a run of the loop (no state.json)",
                      options.resume);
  return {};
}

// The files a resumed loop reads back before anything runs: state.json and every plan it names
// (attempts' files are checked as they are reconciled: one that does not read back is redone). A
// corrupt one is bad input (exit 2), named with what is wrong.
Status check_run_files(const fs::path& root) {
  STITCH_ASSIGN_OR_RETURN(agents::RunState state, agents::load_run_state(root));
  for (const agents::PlanVersion& plan : state.plans) {
    auto doc = read_json_file(root / plan.file);
    if (!doc.ok() || !doc->is_object())
      return make_error(ErrorKind::bad_input, "{}: plan v{} of state.json: {}",
                        (root / plan.file).string(), plan.version,
                        doc.ok() ? "not a JSON object" : doc.error().message);
  }
  return {};
}

// Opens the run to resume. One the loop never started (killed during or right after its capture)
// is captured again when its capture did not finish, and then started: returns whether the loop
// resumes (false: it starts).
Result<bool> open_for_resume(const RunTaskOptions& options,
                             const harness::HarnessLocation& location, Result<run::RunDir>& run) {
  run = run::RunDir::open(options.resume);
  if (!run.ok()) return run.error().with_kind(ErrorKind::bad_input);
  std::error_code ec;
  if (fs::is_regular_file(run->path("state.json"), ec)) {
    STITCH_TRY(check_run_files(run->root()));
    return true;
  }
  if (!capture_complete(run->root())) {
    say(options.on_line, "the run's capture did not finish: capturing again");
    SystemProcessRunner process_runner;
    harness::PythonHarness torch_harness(location, process_runner);
    STITCH_TRY(capture_run_task(*run, run->path("task.py"), torch_harness, options.on_line));
  }
  return false;
}

}  // namespace

Result<RunTaskResult> run_task(const RunTaskOptions& options) {
  STITCH_TRY(check_inputs(options));
  STITCH_ASSIGN_OR_RETURN(LoopSettings settings, loop_settings(options.loop));
  STITCH_TRY(check_target(options));
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  Result<run::RunDir> run = make_error("unset");
  bool resume = false;
  if (options.resume.empty()) {
    SystemProcessRunner process_runner;
    harness::PythonHarness torch_harness(location, process_runner);
    run = capture_task_into_new_run(options.task, options.runs_dir, torch_harness,
                                    options.on_line);
    if (!run.ok()) return run.error();
  } else {
    STITCH_ASSIGN_OR_RETURN(resume, open_for_resume(options, location, run));
  }
  settings.build_cache = options.build_cache;
  settings.export_main = options.export_main;
  auto outcome = run_loop(
      *run, settings, resume, location,
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
