// `python -m stitch_harness.eval_kb`: a KernelBench ModelNew file from another system scored by
// the hardened judge (python/stitch_harness/eval_kb.py, which never imports the solution into its
// own process), and the one typed reader of the eval_kb.json it writes. KernelBenchJudge is the
// interface; tests use a fake.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/harness.h"
#include "util/process.h"
#include "util/result.h"
#include "verify/verdict.h"

namespace stitch::harness {

struct EvalKbRequest {
  fs::path task;      // the KernelBench task (.py with Model)
  fs::path solution;  // the solution (.py with ModelNew)
  fs::path out;       // eval_kb.json
  fs::path log;       // the judge's stdout and stderr
  std::string track = "fp32";
  int trials = 3;
  int iters = 50;
  std::string device = "cuda";
  double timeout_s = 900;  // the solution's process
};

// eval_kb.json: the verdict and what the summary shows; `document` is the whole file.
struct EvalKbReport {
  Outcome outcome = Outcome::runtime_error;
  std::string reason;
  std::string track;
  std::string device;
  std::optional<double> median_ms, eager_median_ms, speedup_vs_eager;
  size_t findings = 0;
  nlohmann::json document;
  bool passed() const { return outcome == Outcome::passed; }
};

// An Error (bad_input) for a document that is not an eval-kb result: not an object, or no
// `outcome` among verdict.h's names.
Result<EvalKbReport> eval_kb_report_from_json(const nlohmann::json& doc);
Result<EvalKbReport> read_eval_kb_report(const fs::path& path);

class KernelBenchJudge {
 public:
  virtual ~KernelBenchJudge() = default;
  // The judge's report. An Error (work_failed) when the judge itself failed or wrote no result;
  // whatever the solution did is the report's outcome.
  virtual Result<EvalKbReport> evaluate(const EvalKbRequest& request) = 0;
};

class PythonKernelBenchJudge final : public KernelBenchJudge {
 public:
  PythonKernelBenchJudge(HarnessLocation location, ProcessRunner& runner)
      : location_(std::move(location)), runner_(runner) {}
  Result<EvalKbReport> evaluate(const EvalKbRequest& request) override;

 private:
  HarnessLocation location_;
  ProcessRunner& runner_;
};

}  // namespace stitch::harness
