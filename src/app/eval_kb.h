// `eval-kb`: a KernelBench ModelNew file from another system scored with the same hardened judge
// (`python -m stitch_harness.eval_kb`, which never imports the solution into the judge's process),
// into a new run directory (attempts/NN/eval_kb.json, events.jsonl, summary.json).
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "app/progress.h"
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
  nlohmann::json result;  // eval_kb.json: {"outcome", "reason", "median_ms", ...}
  std::filesystem::path result_path;
  bool passed() const { return result.value("outcome", std::string()) == "passed"; }
};

// Bad files and tracks are bad_input; a judge that fails or writes no result is logged
// (eval_kb.failed) and a work_failed Error.
Result<EvalKbResult> evaluate_kernelbench(const EvalKbOptions& options);

}  // namespace stitch::app
