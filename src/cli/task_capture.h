// Capturing a task into a new run directory: the first step of every subcommand that accepts a
// task file (verify, profile, plan, generate). Graph and weights only: the judge draws its own
// secret inputs and references, and planning needs shapes.
#pragma once

#include <filesystem>
#include <string>

#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/result.h"

namespace stitch::cli {

// Creates runs_dir/<task>-<timestamp>/, copies the task file, captures it, and records
// capture.start / capture.done / capture.failed in the run's event log (and the failed status).
// `bad_input` is set when the file is not a task at all (the caller's exit code 2).
Result<run::RunDir> capture_task_into_new_run(const std::filesystem::path& task,
                                              const std::string& runs_dir,
                                              const harness::HarnessLocation& location,
                                              bool& bad_input);

}  // namespace stitch::cli
