// The typed reader of runner.json, beside its writer (report.h, which documents the format): what
// the orchestrator (verify/judge/runner_client.h) needs of a run. CUDA-free, in its own library
// (stitch_runner_report), so stitch_verify reads the runner's file without linking the runner.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runner/run_status.h"
#include "sandbox/layers.h"
#include "util/result.h"
#include "verify/verdict.h"

namespace stitch {

// runner.json `status`, as the orchestrator names it (enum_name / enum_from_name<RunnerStatus>).
using RunnerStatus = runner::RunStatus;

struct RunnerCheckSet {
  int index = 0;
  int run = 0;  // 1: the repeat of set 0 (determinism)
  bool canaries_intact = true;
  bool inputs_unchanged = true;
  std::vector<int64_t> poison_remaining;   // per output
  std::vector<int64_t> unjoined_elements;  // per output
  int launches = -1;
  double gpu_ms = 0;
  bool copied_to_slot = false;
};

struct RunnerRecheck {
  int iteration = 0;
  int output = 0;
  int64_t bit_mismatches = 0;
  int64_t tolerance_mismatches = 0;
  double max_abs_diff = 0;
};

struct RunnerReport {
  RunnerStatus status = RunnerStatus::ok;
  std::string message;
  std::string phase;
  std::string nonce;
  bool self_test = false;
  std::string device_name;
  std::vector<HackFinding> findings;
  std::vector<RunnerCheckSet> check_sets;
  bool determinism_checked = false;
  bool deterministic = true;
  std::vector<int64_t> determinism_bit_mismatches;  // per output
  std::vector<double> determinism_max_abs_diff;     // per output
  double init_ms = 0;
  std::vector<double> gpu_ms;             // per timed iteration: events around the call
  std::vector<double> synced_ms;          // per timed iteration: to device idle
  std::vector<double> empty_sync_gap_ms;  // synchronize cost on calls that launch nothing
  std::vector<double> wall_ms;            // per timed iteration
  bool timing_canaries_intact = true;
  bool timing_inputs_unchanged = true;
  std::vector<int> spot_iterations;
  std::vector<RunnerRecheck> rechecks;
  bool launches_available = false;
  std::string launches_detail;
  std::vector<int> launches_per_forward;
  std::vector<std::pair<std::string, int>> kernel_names;  // name, launches seen
  bool network_namespace = false;  // sandbox.network_namespace (also a layer below)
  bool seccomp = false;            // sandbox.seccomp (also a layer below)
  // sandbox.layers: what each isolation layer reported. A file from before the list (or a runner
  // that reports only some) gets network_namespace and seccomp from the two booleans above; every
  // other layer is then absent, which fails the verification closed (sandbox/layers.h).
  std::vector<sandbox::LayerReport> sandbox_layers;
  int threads_before_dlopen = 0;
  int threads_after_init = 0;

  bool canaries_intact() const;  // every check set and the timing phase
  bool inputs_unchanged() const;
  bool has_fatal_finding() const;
};

// A malformed document is an Error naming the problem, never an exception or a crash.
Result<RunnerReport> parse_runner_report(std::string_view json_text);
Result<RunnerReport> read_runner_report(const std::filesystem::path& path);

}  // namespace stitch
