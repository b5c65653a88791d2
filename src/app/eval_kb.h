// `eval-kb`: a KernelBench ModelNew file from another system scored with the same hardened judge
// (`python -m stitch_harness.eval_kb`, which never imports the solution into the judge's process),
// into a new run directory (attempts/NN/eval_kb.json, read by harness/eval_kb_report.h,
// events.jsonl, summary.json). The judge is an interface; tests give a fake.
#pragma once

#include <filesystem>
#include <string>

#include "app/progress.h"
#include "harness/eval_kb_report.h"
#include "harness/harness.h"
#include "util/process.h"
#include "util/result.h"

namespace stitch::app {

// How the judge scores a solution (eval_kb.py's options).
struct EvalKbJudging {
  std::string track = "fp32";
  int trials = 3;  // correctness input sets
  int iters = 50;  // timed iterations (0: no timing)
  std::string device = "cuda";
  double timeout_s = 900;  // the solution's process
};

struct EvalKbOptions {
  std::string task;      // the KernelBench task (.py with Model)
  std::string solution;  // the solution (.py with ModelNew)
  EvalKbJudging judging;
  std::string runs_dir = "runs";
  ProgressSink progress;
};

struct EvalKbRequest {
  std::filesystem::path task, solution;  // absolute
  std::filesystem::path out;             // eval_kb.json
  std::filesystem::path log;             // the judge's stdout and stderr
  EvalKbJudging judging;
};

class KernelBenchJudge {
 public:
  virtual ~KernelBenchJudge() = default;
  // The judge's report. An Error (work_failed) when the judge itself failed or wrote no result;
  // whatever the solution did is the report's outcome.
  virtual Result<harness::EvalKbReport> evaluate(const EvalKbRequest& request) = 0;
};

// python -m stitch_harness.eval_kb through a ProcessRunner.
class PythonKernelBenchJudge final : public KernelBenchJudge {
 public:
  PythonKernelBenchJudge(harness::HarnessLocation location, ProcessRunner& runner)
      : location_(std::move(location)), runner_(runner) {}
  Result<harness::EvalKbReport> evaluate(const EvalKbRequest& request) override;

 private:
  harness::HarnessLocation location_;
  ProcessRunner& runner_;
};

struct EvalKbResult {
  harness::EvalKbReport report;  // eval_kb.json
  std::filesystem::path result_path;
  bool passed() const { return report.passed(); }
};

// Bad files and tracks are bad_input, checked before anything is made; a judge that fails or writes
// no result is logged (eval_kb.failed) and a work_failed Error.
Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options, KernelBenchJudge& judge);

// The same with the Python judge (harness::locate_harness).
Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options);

}  // namespace stitch::app
