// `profile`: a program's CUPTI timeline in stitch-runner (shapes from the capture's graph.json),
// ncu counters for the top kernels and each kernel's bottleneck, written to profile.json in a new
// attempt directory; or, with `reference`, the task's PyTorch reference under torch.profiler
// (python/stitch_harness/profile_reference.py) into the run directory's reference/profile.json.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "app/progress.h"
#include "util/result.h"
#include "verify/profile/profile_report.h"

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

// Bad input is checked first (bad_input); without a GPU nothing is written (a machine Error). A
// profile that fails is logged (profile.failed) before its Error is returned.
Result<Profiled> profile_target(const ProfileOptions& options);

}  // namespace stitch::app
