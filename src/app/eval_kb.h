// `eval-kb`: a KernelBench ModelNew file from another system scored with the same hardened judge
// (harness/eval_kb.h), into a new run directory (attempts/NN/eval_kb.json, events.jsonl,
// summary.json).
#pragma once

#include <filesystem>
#include <string>

#include "app/progress.h"
#include "harness/eval_kb.h"
#include "util/result.h"

namespace stitch::app {

struct EvalKbOptions {
  std::string task;
  std::string solution;
  std::string track = "fp32";
  int trials = 3;
  int iters = 50;
  std::string device = "cuda";
  double timeout_s = 900;
  std::string runs_dir = "runs";
  ProgressSink progress;
};

struct EvalKbResult {
  harness::EvalKbReport report;  // eval_kb.json
  std::filesystem::path result_path;
  bool passed() const { return report.passed(); }
};

// Bad files and tracks are bad_input, checked before anything is made; a judge that fails or writes
// no result is logged (eval_kb.failed) and a work_failed Error.
Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options,
                                          harness::KernelBenchJudge& judge);

// The same with the Python judge (harness::locate_harness).
Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options);

}  // namespace stitch::app
