// `verify`: one program against its task — the task captured first (or a run directory's capture
// reused), the program copied into a new attempt directory with its local headers, the Verifier
// (verify/verifier.h) run with the real compiler, runner, judge and baselines, and verify.json,
// feedback.json and events written.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "app/progress.h"
#include "app/task_capture.h"
#include "util/result.h"
#include "verify/feedback.h"
#include "verify/verifier.h"

namespace stitch::app {

struct VerifyProgramOptions {
  std::string target;  // TASK.py or a run directory
  std::vector<std::string> programs;  // .cu files
  std::string track = "fp32";
  std::string arch;
  std::string runs_dir = "runs";
  int sets = 3;
  int iters = 50;
  double timeout_s = 120;
  bool baselines = true;
  std::vector<std::string> include_dirs;  // -I: where the program's other headers live
  std::vector<std::string> libraries;
  std::string profile;                // a profile.json for the feedback
  std::filesystem::path build_cache;  // empty: build into the attempt directory
  std::function<void(const VerifyStep&)> on_step;  // each step as it finishes
  ProgressSink progress;
};

struct VerifyProgramResult {
  VerifyReport report;
  Feedback feedback;
  std::filesystem::path attempt;
};

// Bad targets, programs and tracks are bad_input Errors, checked before anything is made.
Result<VerifyProgramResult> verify_program(const VerifyProgramOptions& options);

}  // namespace stitch::app
