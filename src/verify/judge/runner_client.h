// The orchestrator's side of stitch-runner (docs/verify-protocol.md): builds the sandboxed command
// (wall-clock limit, process group killed on timeout, scrubbed environment, a nonce on stdin, the
// verification's PID namespace),
// reads runner.json into a typed RunnerReport (runner/runner_report.h), and classifies the run —
// crash signals, timeouts, candidate failures, dynamic hack findings — into an Outcome. The judge's
// comparison comes after; a RunnerVerdict of `passed` means only that the runner saw nothing wrong.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runner/runner_report.h"
#include "util/process.h"
#include "util/result.h"
#include "verify/verdict.h"

namespace stitch {

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
  // > 0: the runner joins this process's PID namespace — the judge's, made for this verification
  // (JudgeSession::namespace_pid) — so it can open the judge's CUDA IPC handles.
  pid_t judge_pid = -1;
  std::vector<std::string> extra_args;
  // Layers the user accepted running without (--insecure-sandbox); any other required layer the
  // runner does not report set up refuses `passed` (classify_runner_run).
  sandbox::InsecureLayers insecure_sandbox;
};

// The supervisor's own deadline for the worker (--deadline-s): a little before the wall-clock
// kill, so a hang still ends with runner.json (status timeout) rather than only with the kill.
double supervisor_deadline_s(double timeout_s);

ProcessSpec build_runner_spec(const RunnerInvocation& invocation, const std::string& nonce);

struct RunnerVerdict {
  Outcome outcome = Outcome::passed;  // passed: nothing wrong seen by the runner
  std::string reason;
  std::vector<HackFinding> findings;  // fatal and non-fatal, including the client's own
  bool runner_fault = false;          // no device, setup failure, usage: not the candidate's doing
  // Required layers the runner did not set up that `insecure_sandbox` waived: the run passed
  // without them, and verify.json says so.
  std::vector<std::string> insecure_layers;
};

// A run that would pass but whose runner.json does not show every layer of
// sandbox::kRequiredRunnerLayers set up fails closed: runtime_error with runner_fault (the
// Verifier's infrastructure_error), reason "sandbox_incomplete: <layers> (...)", unless
// `insecure` waives each missing layer.
RunnerVerdict classify_runner_run(const ProcessResult& process, const Result<RunnerReport>& report,
                                  std::string_view expected_nonce,
                                  const sandbox::InsecureLayers& insecure = {});

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
