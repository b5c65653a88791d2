// Command-line settings of stitch-runner (main.cc parses them; --help documents each one).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "sandbox/seccomp_filter.h"

namespace stitch::runner {

enum class LaunchCounting { off, untimed, all };

struct RunnerOptions {
  std::filesystem::path program;
  std::filesystem::path slots;   // slots.json; optional with --self-test (shapes only)
  std::filesystem::path result;  // runner.json
  std::filesystem::path work_dir;
  std::filesystem::path profile;  // --profile: trace one forward instead of verifying
  bool self_test = false;
  int self_test_check_sets = 2;

  int timing_iters = 50;
  int warmup = 5;
  int timing_sets = 4;
  int rechecks = 3;  // timed iterations re-run on fresh buffers and compared
  double recheck_atol = 1e-4;
  double recheck_rtol = 1e-4;

  double init_timeout_s = 300;
  double call_timeout_s = 60;
  double idle_timeout_s = 10;

  uint64_t guard_bytes = 4096;
  LaunchCounting launch_counting = LaunchCounting::untimed;
  bool isolate_network = true;
  bool seccomp = true;
  // allowlist (default) or denylist: the fallback while CUDA on some machine needs a call the
  // allowlist lacks (the refusal names it in runner.json's findings).
  sandbox::SeccompMode seccomp_mode = sandbox::SeccompMode::allowlist;
  // Layers the orchestrator waived (--insecure-sandbox): not set up at all.
  sandbox::InsecureLayers insecure_sandbox;
  bool under_profiler = false;  // Nsight Compute injected itself: keep its descriptors and preload
  bool nonce_stdin = false;
  double deadline_s = 0;                   // the supervisor's limit for the whole worker; 0: none
  bool worker_pid_namespace = false;       // the worker is PID 1 of its own PID namespace
  std::string orchestrator_pid_namespace;  // "pid:[N]"; empty: not given
  uint64_t max_file_mb = 256;
  uint64_t max_open_files = 1024;
  std::optional<uint64_t> seed;  // fixed RNG seed (debugging only; default: /dev/urandom)
};

}  // namespace stitch::runner
