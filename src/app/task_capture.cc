// Capturing a task into a new run directory (task_capture.h).
#include "app/task_capture.h"

#include <memory>
#include <vector>

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

namespace {

// Renames `partial`'s files into `root`, replacing what is there (a capture interrupted while
// moving left some), `last` after every other one.
Status move_into_run(const fs::path& partial, const fs::path& root, std::string_view last) {
  std::vector<fs::path> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(partial, ec))
    if (entry.path().filename() != last) names.push_back(entry.path().filename());
  if (ec) return make_error(ErrorKind::machine, "{}: {}", partial.string(), ec.message());
  if (fs::exists(partial / last, ec)) names.push_back(fs::path(last));
  for (const fs::path& name : names) {
    if (fs::is_directory(root / name, ec)) fs::remove_all(root / name, ec);
    fs::rename(partial / name, root / name, ec);
    if (ec)
      return make_error(ErrorKind::machine, "moving {} into {}: {}", (partial / name).string(),
                        root.string(), ec.message());
  }
  fs::remove_all(partial, ec);
  return {};
}

}  // namespace

bool capture_complete(const fs::path& run_dir) {
  std::error_code ec;
  return fs::is_regular_file(run_dir / "graph.json", ec);
}

harness::CaptureOutcome capture_into_run(harness::TorchHarness& torch_harness,
                                         harness::CaptureRequest request) {
  const fs::path root = request.out_dir;
  const fs::path partial = root / kCapturePartialDir;
  std::error_code ec;
  fs::remove_all(partial, ec);  // what an interrupted capture left
  fs::create_directories(partial, ec);
  request.out_dir = partial;
  harness::CaptureOutcome outcome = torch_harness.capture(request);
  outcome.dir = root;
  // A failed capture leaves its record (capture.json, capture.log) and no artefact.
  if (!outcome.captured)
    for (std::string_view artefact : {"graph.json", "weights.safetensors", "reference"})
      fs::remove_all(partial / artefact, ec);
  if (Status moved = move_into_run(partial, root, "graph.json"); !moved.ok() && outcome.captured) {
    outcome.captured = false;
    outcome.category = harness::CaptureCategory::internal;
    outcome.message = moved.error().message;
  }
  return outcome;
}

Status capture_run_task(run::RunDir& run, const fs::path& task,
                        harness::TorchHarness& torch_harness, const ProgressSink& progress) {
  (void)run.events().append("capture.start", {{"task_file", fs::absolute(task).string()}});
  say(progress, fmt::format("capturing {} → {}", task.string(), run.root().string()));
  harness::CaptureRequest request;
  request.task_file = task;
  request.out_dir = run.root();
  request.reference = false;
  harness::CaptureOutcome outcome = capture_into_run(torch_harness, request);
  if (!outcome.captured) {
    record_capture_failure(run, outcome);
    return capture_error(task, outcome);
  }
  (void)run.events().append("capture.done",
                            {{"nodes", outcome.nodes}, {"seconds", outcome.seconds}});
  return {};
}

Result<run::RunDir> capture_task_into_new_run(const fs::path& task, const fs::path& runs_dir,
                                              harness::TorchHarness& torch_harness,
                                              const ProgressSink& progress) {
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(runs_dir, run::task_name_from_path(task)));
  STITCH_ASSIGN_OR_RETURN(std::string source, read_file(task));
  STITCH_TRY(run.write_text("task.py", source));
  STITCH_TRY(capture_run_task(run, task, torch_harness, progress));
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
