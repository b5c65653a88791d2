// `profile`: a program's CUPTI timeline in stitch-runner (shapes from the capture's graph.json),
// ncu counters for the top kernels and each kernel's bottleneck, written to profile.json in a new
// attempt directory; or, with `reference`, the task's PyTorch reference under torch.profiler
// (python/stitch_harness/profile_reference.py) into the run directory's reference/profile.json.
// The profilers, the compiler and the capture are interfaces (ProfileTools); tests give fakes.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "app/progress.h"
#include "app/task_capture.h"
#include "util/result.h"
#include "verify/build/compiler.h"
#include "verify/profile/profile_report.h"
#include "verify/profile/profile_run.h"

namespace stitch::app {

struct ProfileOptions {
  std::string target;   // TASK.py or RUN_DIR
  std::string program;  // PROGRAM.cu (or a built .so)
  bool reference = false;
  int top = 3;
  bool no_ncu = false;
  std::string runs_dir = "runs";
  int warmup = 3;
  std::string arch;
  double peak_tflops = 0;
  double peak_gbps = 0;
  double timeout_s = 600;
  double ncu_timeout_s = 600;
  std::string build_cache;
  std::string track = "fp32";
  ProgressSink progress;
};

struct Profiled {
  ProfileReport report;
  nlohmann::json document;   // profile.json
  std::filesystem::path written;  // where it is
};

struct ReferenceProfileRequest {
  std::filesystem::path task;  // task.py
  std::filesystem::path out;   // profile.json (profile_report.h's format)
  int warmup = 3;
  std::string track = "fp32";
  double timeout_s = 600;
};

// What runs the profiles: stitch-runner with ncu on a built program, torch.profiler on the
// reference.
class Profilers {
 public:
  virtual ~Profilers() = default;
  // verify/profile_run.h's profile_program: an Error when the timeline could not be made.
  virtual Result<ProfileReport> program(const ProfileRequest& request) = 0;
  // Writes request.out, or an Error saying why not.
  virtual Status reference(const ReferenceProfileRequest& request) = 0;
};

// What `profile` needs from this machine (the real ones: the overload below).
struct ProfileTools {
  TaskCapture capture;  // a task file into a new run directory (programs)
  Compiler& compiler;   // builds a .cu through the build cache
  Profilers& profilers;
  std::filesystem::path runner;  // stitch-runner
  std::string arch;              // the GPU's, for a build without --arch
};

// Bad input is checked first (bad_input). A profile that fails is logged (profile.failed) before
// its Error is returned; only a complete one gets an attempt directory.
Result<Profiled> profile_target(const ProfileOptions& options, const ProfileTools& tools);

// The same on this machine's GPU: without one nothing is written (a machine Error), nor without
// stitch-runner (programs) or the harness (tasks, the reference).
Result<Profiled> profile_target(const ProfileOptions& options);

}  // namespace stitch::app
