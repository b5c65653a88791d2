// Capturing a task into a new run directory: the first step of every use that accepts a task file
// (plan, generate, verify, profile, run, bench). Graph and weights only: the judge draws its own
// secret inputs and references, and planning needs shapes.
#pragma once

#include <filesystem>
#include <functional>

#include "app/progress.h"
#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/result.h"

namespace stitch::app {

// A failed capture as an Error: bad_input when the file is not a task at all (the harness's
// not_a_task), else work_failed; the message names the task file.
Error capture_error(const std::filesystem::path& task, const harness::CaptureOutcome& outcome);

// Records a failed capture in `run`: capture.failed in its log and the failed status.
void record_capture_failure(run::RunDir& run, const harness::CaptureOutcome& outcome);

// The harness writes a capture into this folder of the run directory; its files are renamed into
// the run only once it has finished, graph.json last: a run directory holds a graph.json only when
// its capture is complete, however the orchestrator died, and a run without one captures again.
inline constexpr std::string_view kCapturePartialDir = "capture.partial";

// Whether `run_dir`'s capture finished (its graph.json is there).
bool capture_complete(const std::filesystem::path& run_dir);

// Captures `request.task_file` into the run directory `request.out_dir` through
// kCapturePartialDir (emptied first). A failed capture moves only its record (capture.json,
// capture.log); one whose files cannot be moved in is a failed capture (internal) saying why.
harness::CaptureOutcome capture_into_run(harness::TorchHarness& torch_harness,
                                         harness::CaptureRequest request);

// Captures `task` (graph and weights) into `run`, recording capture.start / capture.done /
// capture.failed in its event log (and the failed status); a failure is capture_error's Error.
Status capture_run_task(run::RunDir& run, const std::filesystem::path& task,
                        harness::TorchHarness& torch_harness, const ProgressSink& progress);

// Creates runs_dir/<task>-<timestamp>/, copies the task file, captures it with `torch_harness`,
// and records capture.start / capture.done / capture.failed in the run's event log (and the failed
// status). A task that does not capture is capture_error's Error.
Result<run::RunDir> capture_task_into_new_run(const std::filesystem::path& task,
                                              const std::filesystem::path& runs_dir,
                                              harness::TorchHarness& torch_harness,
                                              const ProgressSink& progress);

// How a use captures a task file into a new run directory (fakes in tests).
using TaskCapture = std::function<Result<run::RunDir>(const std::filesystem::path& task)>;

// The real one: the Python harness (located on the first call; an Error when it is not found),
// capture_task_into_new_run into `runs_dir`.
TaskCapture system_task_capture(std::filesystem::path runs_dir, ProgressSink progress);

}  // namespace stitch::app
