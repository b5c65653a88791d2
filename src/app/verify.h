// `verify`: one program against its task — the task captured first (or a run directory's capture
// reused), the program copied into a new attempt directory with its local headers, the Verifier
// (verify/verifier.h) run over the side effects it is given (the real compiler, runner, judge and
// baselines, or fakes), and verify.json, feedback.json and events written.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "app/progress.h"
#include "app/task_capture.h"
#include "run/events.h"
#include "util/result.h"
#include "verify/feedback.h"
#include "verify/build/gpu_info.h"
#include "verify/verifier.h"

namespace stitch::app {

struct VerifyProgramOptions {
  std::string target;  // TASK.py or a run directory
  std::vector<std::string> programs;  // .cu files
  std::string track = "fp32";
  std::string arch;
  std::string runs_dir = "runs";
  // The Verifier's: sets, timing_iters, runner_timeout_s, baselines, build_cache_dir (empty: build
  // into the attempt directory), on_step (each step as it finishes, after events.jsonl has it).
  // runner_path and worker_id are this machine's (VerifyTools, the GPU).
  VerifyOptions verify;
  std::vector<std::string> include_dirs;  // -I: where the program's other headers live
  std::vector<std::string> libraries;
  std::string profile;  // a profile.json for the feedback
  std::vector<std::string> insecure_sandbox;  // --insecure-sandbox names → verify.insecure_sandbox
  ProgressSink progress;
};

struct VerifyProgramResult {
  VerifyReport report;
  Feedback feedback;
  std::filesystem::path attempt;
};

// What `verify` needs from this machine (the real ones: the overload below; fakes in tests).
struct VerifyTools {
  TaskCapture capture;                // a task file into a new run directory
  VerifierDeps verifier;              // compiler, library audit, runner, judge, baselines
  std::optional<GpuInfo> gpu;         // nullopt: none here (the verdict stops at no_gpu)
  std::filesystem::path runner_path;  // stitch-runner
};

// A finished verification step as events.jsonl's verify.step (verify and the loop alike).
void log_verify_step(run::EventLog& events, const VerifyStep& step);

// Bad targets, programs and tracks are bad_input Errors, checked before anything is made; what
// went wrong with the program or the machinery is in the report (verify.json).
Result<VerifyProgramResult> verify_program(const VerifyProgramOptions& options,
                                           const VerifyTools& tools);

// The same with the real side effects (harness::locate_harness, nvcc, stitch-runner, GPU 0).
Result<VerifyProgramResult> verify_program(const VerifyProgramOptions& options);

}  // namespace stitch::app
