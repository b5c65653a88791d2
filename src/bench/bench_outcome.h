// How one task of a bench ended (results.jsonl's `outcome`): the Verifier's verdict
// (verify/verdict.h's Outcome, under the same names) or one of the bench's own endings, where the
// loop reached no verdict. Header-only, like verdict.h: a name table and its parser
// (util/enum_names.h), so the records on disk keep their strings and routing compares enums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "util/enum_names.h"
#include "verify/verdict.h"

namespace stitch::bench {

// The order is the reports' order (the HTML header counts outcomes in it).
enum class BenchOutcome : uint8_t {
  passed,
  wrong,
  compile_error,
  runtime_error,
  timeout,
  hacked,
  refused,               // the built-in Coder cannot implement an op, or the task did not capture
  no_gpu,                // built and statically checked on a machine without a GPU
  infrastructure_error,  // the machinery failed; says nothing about the program
  budget_exhausted,      // the bench's time or attempt budget ran out before a verdict
};
inline constexpr std::array<std::string_view, 10> kBenchOutcomeNames = {
    "passed", "wrong",   "compile_error", "runtime_error",        "timeout",
    "hacked", "refused", "no_gpu",        "infrastructure_error", "budget_exhausted"};
static_assert(kBenchOutcomeNames.size() == static_cast<size_t>(BenchOutcome::budget_exhausted) + 1);

constexpr std::string_view bench_outcome_name(BenchOutcome outcome) {
  return enum_name(kBenchOutcomeNames, outcome);
}
constexpr std::optional<BenchOutcome> bench_outcome_from_name(std::string_view name) {
  return enum_from_name<BenchOutcome>(kBenchOutcomeNames, name);
}

// Every verdict is a bench outcome of the same name.
constexpr bool every_verdict_is_named() {
  for (std::string_view name : kOutcomeNames)
    if (!bench_outcome_from_name(name)) return false;
  return true;
}
static_assert(every_verdict_is_named(), "a verify/verdict.h Outcome has no BenchOutcome");

constexpr BenchOutcome bench_outcome_of(Outcome verdict) {
  return *bench_outcome_from_name(enum_name(verdict));
}

}  // namespace stitch::bench
