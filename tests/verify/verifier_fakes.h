// Fakes of the Verifier's side effects (verify/verifier.h: library audit, runner, judge, baselines;
// FakeCompiler is in verify/build/compiler.h), shared by the Verifier's tests and the loop's
// (tests/agents), which drive the real Verifier through them.
#pragma once

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/sandbox_layers.h"
#include "verify/verifier.h"

namespace stitch::verify_fakes {

namespace fs = std::filesystem;

// Every fake appends what it was asked to do here, so tests can check the order of the steps.
// Fakes may be called from two threads (the baseline cache is read while the judge starts).
struct CallLog {
  std::mutex mutex;
  std::vector<std::string> calls;
  void add(std::string call) {
    std::lock_guard lock(mutex);
    calls.push_back(std::move(call));
  }
  size_t index_of(const std::string& call) const {
    auto found = std::find(calls.begin(), calls.end(), call);
    return found == calls.end() ? calls.size() : static_cast<size_t>(found - calls.begin());
  }
};

class FakeAuditor final : public LibraryAuditor {
 public:
  explicit FakeAuditor(CallLog& log) : log_(log) {}
  std::vector<HackFinding> findings;
  bool fail = false;
  Result<std::vector<HackFinding>> audit(const fs::path& library) override {
    log_.add("audit");
    if (fail) return make_error("{}: not an ELF file", library.string());
    return findings;
  }

 private:
  CallLog& log_;
};

// Classifies with the real classify_runner_run, from a scripted process end and runner.json.
class FakeRunner final : public RunnerLauncher {
 public:
  explicit FakeRunner(CallLog& log) : log_(log) {}
  ProcessResult process{0, 0, false, 1.0, "", ""};
  std::optional<std::string> runner_json;
  bool cannot_start = false;
  std::vector<RunnerInvocation> invocations;

  Result<RunnerRun> run(const RunnerInvocation& invocation) override {
    log_.add("runner");
    invocations.push_back(invocation);
    if (cannot_start) return make_error("stitch-runner: command not found");
    RunnerRun run;
    run.process = process;
    Result<RunnerReport> report = runner_json ? parse_runner_report(*runner_json)
                                              : Result<RunnerReport>(make_error("missing"));
    if (report.ok()) run.report = *report;
    run.verdict = classify_runner_run(process, report, "fakenonce", invocation.insecure_sandbox);
    return run;
  }

 private:
  CallLog& log_;
};

class FakeJudge final : public JudgeSession {
 public:
  explicit FakeJudge(CallLog& log) : log_(log) {}
  bool start_fails = false;
  int ready_timing_sets = 0;  // what 'ready' says (0: nothing, as an older judge)
  std::string memory_note;
  std::optional<JudgeComparison> comparison;  // nullopt: compare fails
  int starts = 0, compares = 0, stops = 0;
  bool running = false;
  fs::path slots;

  Result<JudgeReady> start(const JudgeServeRequest& request) override {
    log_.add("judge.start");
    ++starts;
    if (start_fails) return make_error("judge serve: setup failed: CUDA out of memory");
    running = true;
    slots = request.work_dir / "slots.json";
    JudgeReady ready;
    ready.slots_path = slots;
    ready.start_s = 3.0;
    ready.setup_s = 2.0;
    ready.sets = request.sets;
    ready.spot_slots = request.spot_slots;
    ready.timing_sets = ready_timing_sets;
    ready.memory_note = memory_note;
    return ready;
  }
  Result<JudgeComparison> compare(double) override {
    log_.add("judge.compare");
    ++compares;
    if (!comparison) return make_error("the judge exited before 'compared' (killed by SIGKILL)");
    return *comparison;
  }
  void stop() override {
    if (running) log_.add("judge.stop");
    ++stops;
    running = false;
  }

 private:
  CallLog& log_;
};

class FakeBaselines final : public BaselineSource {
 public:
  explicit FakeBaselines(CallLog& log) : log_(log) {}
  bool fail = false;
  bool cached = false;  // what a cache_only lookup finds
  Result<BaselineReport> baseline(const BaselineRequest& request) override {
    log_.add(request.cache_only ? "baseline.lookup" : "baseline");
    if (fail) return make_error("judge baseline exit code 1 without writing B.json");
    BaselineReport report;
    report.gpu = "NVIDIA H200";
    if (request.cache_only && !cached) {
      report.missing = {"eager", "compile", "reduce-overhead"};
      return report;
    }
    report.from_cache = request.cache_only;
    report.modes.push_back({"eager", TimingStats{2.0, 1.9, 2.2, 1.8, 50}, 0, ""});
    report.modes.push_back({"compile", TimingStats{1.0, 0.9, 1.1, 0.9, 50}, 12.0, ""});
    report.modes.push_back({"reduce-overhead", std::nullopt, 0, "timed out after 1800 s"});
    return report;
  }

 private:
  CallLog& log_;
};

// Every fake above over one call log, and the Verifier's deps over them.
struct VerifierFakes {
  CallLog log;
  FakeCompiler compiler;
  FakeAuditor auditor{log};
  FakeRunner runner{log};
  FakeJudge judge{log};
  FakeBaselines baselines{log};
  VerifierDeps deps() { return {compiler, auditor, runner, judge, &baselines}; }
};

inline std::string runner_json(const std::string& status = "ok", const std::string& findings = "[]",
                               const std::string& empty_gaps = "[]") {
  return fmt::format(R"({{
    "format": "stitchcuda.runner", "version": 1, "status": "{}", "message": "it said {}",
    "phase": "timing", "nonce": "fakenonce", "init_ms": 1.25, "findings": {},
    "determinism": {{"checked": true, "identical": true, "outputs": []}},
    "timing": {{"gpu_ms": [0.40, 0.50, 0.45, 0.42, 0.48], "synced_ms": [0.5, 0.5, 0.5, 0.5, 0.5],
               "wall_ms": [0.6, 0.6, 0.6, 0.6, 0.6], "empty_sync_gap_ms": {}}},
    "launches": {{"available": true, "per_forward": [2, 2, 3], "kernel_names": {{"k": 7}}}},
    "sandbox": {}
  }})",
                     status, status, findings, empty_gaps, test_support::complete_sandbox_json());
}

inline JudgeComparison passing_comparison() {
  JudgeComparison comparison;
  comparison.passed = true;
  comparison.rel_err_norm_max = 5e-5;
  for (int set = 0; set < 3; ++set) {
    JudgeSet entry;
    entry.where = fmt::format("check set {}", set);
    entry.passed = true;
    JudgeOutput output;
    output.check.passed = true;
    output.check.relative_error_norm = 1e-7;
    output.elements = 4096;
    entry.outputs.push_back(output);
    comparison.sets.push_back(entry);
  }
  return comparison;
}

}  // namespace stitch::verify_fakes
