// Capturing a task into a new run directory (task_capture.h).
#include "app/task_capture.h"

#include <memory>

#include <fmt/format.h>

#include "util/fs.h"
#include "util/process.h"

namespace stitch::app {

namespace fs = std::filesystem;

Error capture_error(const fs::path& task, const harness::CaptureOutcome& outcome) {
  // The harness names its failure categories (python/stitch_harness/errors.py); only not_a_task
  // says the input itself is wrong.
  const ErrorKind kind = outcome.category == harness::CaptureCategory::not_a_task
                             ? ErrorKind::bad_input
                             : ErrorKind::work_failed;
  return make_error(kind, "capturing {}: {}", task.string(), outcome.message);
}

void record_capture_failure(run::RunDir& run, const harness::CaptureOutcome& outcome) {
  const std::string_view category = harness::capture_category_name(outcome.category);
  (void)run.events().append("capture.failed",
                            {{"category", category}, {"message", outcome.message}});
  (void)run.set_status(
      run::RunStatus::failed,
      {{"stage", "capture"}, {"category", category}, {"message", outcome.message}});
}

Result<run::RunDir> capture_task_into_new_run(const fs::path& task, const fs::path& runs_dir,
                                              harness::TorchHarness& torch_harness,
                                              const ProgressSink& progress) {
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(runs_dir, run::task_name_from_path(task)));
  STITCH_ASSIGN_OR_RETURN(std::string source, read_file(task));
  STITCH_TRY(run.write_text("task.py", source));
  (void)run.events().append("capture.start", {{"task_file", fs::absolute(task).string()}});
  say(progress, fmt::format("capturing {} → {}", task.string(), run.root().string()));
  harness::CaptureRequest request;
  request.task_file = task;
  request.out_dir = run.root();
  request.reference = false;
  harness::CaptureOutcome outcome = torch_harness.capture(request);
  if (!outcome.captured) {
    record_capture_failure(run, outcome);
    return capture_error(task, outcome);
  }
  (void)run.events().append("capture.done",
                            {{"nodes", outcome.nodes}, {"seconds", outcome.seconds}});
  return run;
}

TaskCapture system_task_capture(fs::path runs_dir, ProgressSink progress) {
  return [runs_dir = std::move(runs_dir),
          progress = std::move(progress)](const fs::path& task) -> Result<run::RunDir> {
    STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
    SystemProcessRunner process_runner;
    harness::PythonHarness torch_harness(location, process_runner);
    return capture_task_into_new_run(task, runs_dir, torch_harness, progress);
  };
}

}  // namespace stitch::app
