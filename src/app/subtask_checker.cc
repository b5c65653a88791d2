// One LLM-written subtask checked alone (subtask_checker.h).
#include "app/subtask_checker.h"

#include "util/fs.h"
#include "util/process.h"

namespace stitch::app {

Result<agents::AttemptResult> SystemSubtaskChecker::check(
    const agents::SubtaskCheckRequest& request) {
  const std::filesystem::path capture_dir = request.dir / "capture";
  STITCH_TRY(make_dirs(capture_dir));
  STITCH_ASSIGN_OR_RETURN(std::string source, read_file(request.task_file));
  STITCH_TRY(write_file_atomic(capture_dir / "task.py", source));
  SystemProcessRunner process_runner;
  harness::PythonHarness torch_harness(harness_, process_runner);
  harness::CaptureRequest capture;
  capture.task_file = capture_dir / "task.py";
  capture.out_dir = capture_dir;
  capture.reference = false;
  const harness::CaptureOutcome outcome = torch_harness.capture(capture);
  if (!outcome.captured)
    return make_error(ErrorKind::work_failed, "capturing the subtask's task {}: {}",
                      request.task_file.string(), outcome.message);
  agents::VerifyJob job;
  job.run_dir = capture_dir;
  job.attempt_dir = request.dir;
  job.draft = &request.draft;
  return verifier_.verify(job);
}

}  // namespace stitch::app
