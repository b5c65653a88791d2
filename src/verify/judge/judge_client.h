// The orchestrator's side of the judge (docs/verify-protocol.md): `python -m stitch_harness.judge
// serve` held open as a JudgeSession (start → ready + slots.json, compare, stop), and `judge
// baseline` run to completion as a BaselineSource. Both are interfaces so the Verifier can be tested
// on a CPU with fakes (STYLE.md item 10); the Python implementations live here too, with the
// parsers of the judge's JSON (the `compared` result and the baseline file).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/line_child.h"
#include "util/process.h"
#include "util/python_module.h"
#include "util/result.h"
#include "verify/track.h"
#include "verify/verdict.h"

namespace stitch {

// ---- judge serve -------------------------------------------------------------------------------

struct JudgeServeRequest {
  std::filesystem::path graph_dir;  // capture directory (graph.json, weights.safetensors, task.py)
  std::filesystem::path work_dir;   // slots.json goes here
  Track track = Track::fp32;
  int sets = 3;
  int timing_sets = 4;
  int spot_slots = 2;
  std::string device = "cuda";
  std::filesystem::path log_path;  // the judge's stderr
  double ready_timeout_s = 900;    // loading the model and computing the references
  // Start the judge as PID 1 of a PID namespace of its own, which the runner then joins
  // (namespace_pid()): the verification's namespace (docs/verify-protocol.md "Process layout").
  bool own_pid_namespace = false;
  std::vector<std::string> extra_args;  // tests: --fake-ipc
};

struct JudgeReady {
  std::filesystem::path slots_path;
  double start_s = 0;  // spawn → ready, wall clock
  double setup_s = 0;  // the judge's own account of the reference part of that (model, references)
  int sets = 0;
  int spot_slots = 0;
  int timing_sets = 0;      // the runner's, as the judge sized them to memory (0: not said)
  std::string memory_note;  // why the judge holds fewer sets than asked; empty when it does not
};

// One compared output (the judge's OutputCheck, compare.py).
struct JudgeOutput {
  OutputCheck check;
  int64_t elements = 0;
  std::string message;
  bool degenerate_reference = false;
  std::string degenerate_reason;
  // Elements outside atol/rtol of the FP32 reference that passed against an FP64 one, within
  // the FP32 reference's own error (compare.recheck_against_exact); 0 when none.
  int64_t exact_reference_elements = 0;
};

// One check set or spot slot.
struct JudgeSet {
  std::string where;  // "check set 0", "spot slot 1"
  bool passed = false;
  bool inputs_unchanged = true;
  bool filled = true;  // spot slots: the runner filled its inputs
  std::string message;
  std::vector<JudgeOutput> outputs;
};

struct JudgeComparison {
  bool passed = false;
  std::string track;
  double atol = 0;
  double rtol = 0;
  double rel_err_norm_max = 0;
  std::vector<JudgeSet> sets;  // check sets first, then spot slots
  std::vector<HackFinding> findings;
  std::vector<std::string> messages;
  std::vector<std::string> degenerate_reasons;
  double compare_s = 0;
};

// The `result` object of {"event":"compared","result":{...}}. Non-finite numbers arrive as null
// and become +inf. A malformed document is an Error.
Result<JudgeComparison> parse_judge_comparison(const nlohmann::json& result);

// Whether a verification's judge (and with it the runner) gets a PID namespace of its own: where
// the OS permits one (root), unless the environment says STITCH_VERIFY_PID_NAMESPACE=0 — the
// escape hatch should the shared namespace ever break CUDA IPC on a machine. Without it the
// runner's `pid_namespace` layer reports set_up false.
bool use_verification_pid_namespace();

class JudgeSession {
 public:
  virtual ~JudgeSession() = default;
  // Starts the judge and waits for {"event":"ready"}. An Error when it could not start, reported an
  // error or did not become ready in time (the process is stopped before returning).
  virtual Result<JudgeReady> start(const JudgeServeRequest& request) = 0;
  // Sends {"cmd":"compare"} and waits for the result.
  virtual Result<JudgeComparison> compare(double timeout_s) = 0;
  // Ends the judge: {"cmd":"exit"}, then its process group is killed. Never fails; idempotent;
  // safe to call when start() failed or was never called.
  virtual void stop() = 0;
  // While the judge runs in a PID namespace of its own: its pid, for the runner to join that
  // namespace (util/pid_namespace.h); -1 otherwise.
  virtual pid_t namespace_pid() const { return -1; }
};

class PythonJudgeSession final : public JudgeSession {
 public:
  explicit PythonJudgeSession(PythonLocation location) : location_(std::move(location)) {}
  ~PythonJudgeSession() override { stop(); }

  Result<JudgeReady> start(const JudgeServeRequest& request) override;
  Result<JudgeComparison> compare(double timeout_s) override;
  void stop() override;
  pid_t namespace_pid() const override { return child_ && own_pid_namespace_ ? child_->pid() : -1; }

  // The judge's process id while it runs (tests check that it is gone after stop()).
  pid_t pid() const { return child_ ? child_->pid() : -1; }
  // How the last judge process ended (valid after stop()).
  const ProcessResult& exit_result() const { return exit_result_; }

  // How long stop() waits for the judge to leave by itself before killing its group (default
  // 10 s: freeing a large CUDA context takes a moment).
  void set_stop_grace(double seconds) { stop_grace_s_ = seconds; }

  // argv of `judge serve` for `request` (the interpreter first).
  std::vector<std::string> serve_command(const JudgeServeRequest& request) const;

 private:
  // The next protocol event: a JSON object with an "event" key. Other lines are skipped.
  Result<nlohmann::json> next_event(double timeout_s, const std::string& waiting_for);

  PythonLocation location_;
  std::unique_ptr<LineChild> child_;
  std::filesystem::path log_path_;
  ProcessResult exit_result_;
  double stop_grace_s_ = 10.0;
  bool own_pid_namespace_ = false;
};

// ---- judge baseline ----------------------------------------------------------------------------

struct BaselineRequest {
  std::filesystem::path graph_dir;
  Track track = Track::fp32;
  std::filesystem::path out_path;  // B.json
  std::filesystem::path log_path;  // the judge's output
  int iters = 50;
  int warmup = 5;
  int timing_sets = 4;
  std::string device = "cuda";
  double timeout_s = 3600;  // every mode, torch.compile included
  bool cache_only = false;  // time nothing: what the cache holds, the rest under `missing`
};

struct BaselineTiming {
  std::string mode;  // "eager", "compile", "reduce-overhead"
  std::optional<TimingStats> stats;  // the runner's method: flush, rotate, device sync
  double compile_s = 0;
  std::string error;  // the mode failed (no stats)
};

struct BaselineReport {
  std::string gpu;
  std::string track;
  bool from_cache = false;
  std::vector<BaselineTiming> modes;  // in the judge's order
  std::vector<std::string> missing;   // cache_only: the modes the cache lacks
};

Result<BaselineReport> parse_baseline_report(const nlohmann::json& doc);

class BaselineSource {
 public:
  virtual ~BaselineSource() = default;
  // Times the reference's baselines (cached by the judge per task, GPU, track and torch version).
  // Must run before any candidate code is loaded (HACKS.md row 19). With request.cache_only, only
  // reads the cache (safe to run alongside other work).
  virtual Result<BaselineReport> baseline(const BaselineRequest& request) = 0;
};

class PythonBaselineSource final : public BaselineSource {
 public:
  PythonBaselineSource(PythonLocation location, ProcessRunner& runner)
      : location_(std::move(location)), runner_(runner) {}
  Result<BaselineReport> baseline(const BaselineRequest& request) override;

 private:
  PythonLocation location_;
  ProcessRunner& runner_;
};

}  // namespace stitch
