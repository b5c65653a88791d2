// eval_kb.json, what `python -m stitch_harness.eval_kb` (python/stitch_harness/eval_kb.py, the
// hardened judge of a KernelBench ModelNew file from another system) writes: its one typed reader.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"
#include "verify/verdict.h"

namespace stitch::harness {

namespace fs = std::filesystem;

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

}  // namespace stitch::harness
