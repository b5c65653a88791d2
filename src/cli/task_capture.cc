#include "cli/task_capture.h"

#include <fmt/format.h>

#include "util/fs.h"
#include "util/process.h"

namespace stitch::cli {

namespace fs = std::filesystem;

Result<run::RunDir> capture_task_into_new_run(const fs::path& task, const std::string& runs_dir,
                                              const harness::HarnessLocation& location,
                                              bool& bad_input) {
  STITCH_ASSIGN_OR_RETURN(run::RunDir run,
                          run::RunDir::create(runs_dir, run::task_name_from_path(task)));
  STITCH_ASSIGN_OR_RETURN(std::string source, read_file(task));
  STITCH_TRY(run.write_text("task.py", source));
  (void)run.events().append("capture.start", {{"task_file", fs::absolute(task).string()}});
  fmt::print(stderr, "capturing {} → {}\n", task.string(), run.root().string());
  SystemProcessRunner process_runner;
  harness::PythonHarness torch_harness(location, process_runner);
  harness::CaptureRequest request;
  request.task_file = task;
  request.out_dir = run.root();
  request.reference = false;
  harness::CaptureOutcome outcome = torch_harness.capture(request);
  if (!outcome.captured) {
    (void)run.events().append("capture.failed",
                              {{"category", outcome.category}, {"message", outcome.message}});
    (void)run.set_status(
        run::RunStatus::failed,
        {{"stage", "capture"}, {"category", outcome.category}, {"message", outcome.message}});
    bad_input = outcome.category == "not_a_task";
    return make_error("capturing {}: {}", task.string(), outcome.message);
  }
  (void)run.events().append("capture.done",
                            {{"nodes", outcome.nodes}, {"seconds", outcome.seconds}});
  return run;
}

}  // namespace stitch::cli
