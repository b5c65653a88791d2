// The orchestrator's side of stitch-runner (docs/verify-protocol.md): builds the sandboxed command
// (wall-clock limit, process group killed on timeout, scrubbed environment, a nonce on stdin),
// reads runner.json into a typed RunnerReport, and classifies the run — crash signals, timeouts,
// candidate failures, dynamic hack findings — into an Outcome. The judge's comparison comes after;
// a RunnerVerdict of `passed` means only that the runner saw nothing wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/process.h"
#include "util/result.h"
#include "verify/verdict.h"

namespace stitch {

// runner.json `status` (src/runner/report.h).
enum class RunnerStatus : uint8_t {
  ok,
  init_failed,
  forward_failed,
  cuda_error,
  abi_mismatch,
  dlopen_failed,
  timeout,       // the runner's own watchdog fired
  no_device,     // not the candidate's fault
  setup_failed,  // not the candidate's fault
};
std::string_view runner_status_name(RunnerStatus status);
std::optional<RunnerStatus> runner_status_from_name(std::string_view name);

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
  std::vector<double> gpu_ms;     // per timed iteration: events around the call
  std::vector<double> synced_ms;  // per timed iteration: to device idle
  std::vector<double> empty_sync_gap_ms;  // synchronize cost on calls that launch nothing
  std::vector<double> wall_ms;    // per timed iteration
  bool timing_canaries_intact = true;
  bool timing_inputs_unchanged = true;
  std::vector<int> spot_iterations;
  std::vector<RunnerRecheck> rechecks;
  bool launches_available = false;
  std::string launches_detail;
  std::vector<int> launches_per_forward;
  std::vector<std::pair<std::string, int>> kernel_names;  // name, launches seen
  bool network_namespace = false;
  bool seccomp = false;
  int threads_before_dlopen = 0;
  int threads_after_init = 0;

  bool canaries_intact() const;  // every check set and the timing phase
  bool inputs_unchanged() const;
  bool has_fatal_finding() const;
};

// A malformed document is an Error naming the problem, never an exception or a crash.
Result<RunnerReport> parse_runner_report(std::string_view json_text);
Result<RunnerReport> read_runner_report(const std::filesystem::path& path);

struct RunnerInvocation {
  std::filesystem::path runner;    // the stitch-runner executable
  std::filesystem::path program;   // candidate .so
  std::filesystem::path slots;     // judge's slots.json (optional with self_test)
  std::filesystem::path result;    // runner.json
  std::filesystem::path work_dir;  // sandbox cwd; created and emptied by the runner
  bool self_test = false;
  int timing_iters = 50;
  int warmup = 5;
  int timing_sets = 4;
  double timeout_s = 600;      // whole run; the process group is killed after it
  double call_timeout_s = 60;  // the runner's own limits, below timeout_s
  double init_timeout_s = 300;
  double idle_timeout_s = 10;
  std::string nonce;  // empty: run_runner draws one
  std::vector<std::string> extra_args;
};

ProcessSpec build_runner_spec(const RunnerInvocation& invocation, const std::string& nonce);

struct RunnerVerdict {
  Outcome outcome = Outcome::passed;  // passed: nothing wrong seen by the runner
  std::string reason;
  std::vector<HackFinding> findings;  // fatal and non-fatal, including the client's own
  bool runner_fault = false;          // no device, setup failure, usage: not the candidate's doing
};

RunnerVerdict classify_runner_run(const ProcessResult& process, const Result<RunnerReport>& report,
                                  std::string_view expected_nonce);

struct RunnerRun {
  ProcessResult process;
  std::optional<RunnerReport> report;
  std::string report_error;  // why `report` is empty
  RunnerVerdict verdict;
};

// Removes a stale runner.json, runs the runner, reads and classifies. An Error only when the
// runner could not be started at all.
Result<RunnerRun> run_runner(ProcessRunner& process_runner, const RunnerInvocation& invocation);

// 32 hex characters from the OS's random source.
std::string make_nonce();

}  // namespace stitch
