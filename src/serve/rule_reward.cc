// The rule reward (rule_reward.h).
#include "serve/rule_reward.h"

#include <algorithm>

namespace stitch::serve {
namespace {

ErrorCode error_of(const VerifyReport& report) {
  if (report.state == VerifyState::no_gpu) return ErrorCode::no_gpu;
  if (report.state == VerifyState::infrastructure_error || !report.outcome)
    return ErrorCode::infrastructure_error;
  switch (*report.outcome) {
    case Outcome::compile_error:
      return ErrorCode::compile_error;
    case Outcome::runtime_error:
      return ErrorCode::runtime_error;
    case Outcome::timeout:
      return ErrorCode::candidate_timeout;
    case Outcome::wrong:
      return ErrorCode::wrong;
    case Outcome::hacked:
      return ErrorCode::hacked;
    case Outcome::passed:
      return ErrorCode::none;
  }
  return ErrorCode::infrastructure_error;
}

}  // namespace

RuleVerdict rule_verdict(const VerifyReport& report, const std::string& baseline) {
  RuleVerdict verdict;
  verdict.compiled = report.built;
  verdict.hacked = report.outcome == Outcome::hacked || report.has_fatal_finding();
  verdict.correct = report.passed() && !verdict.hacked;
  verdict.error = verdict.hacked ? ErrorCode::hacked : error_of(report);
  verdict.message = report.passed() ? "passed" : report.reason.substr(0, 300);
  for (const Speedup& speedup : report.speedups) {
    if (speedup.mode != baseline) continue;
    verdict.speedup = speedup.speedup;
    verdict.baseline_ms = speedup.baseline_ms;
  }
  if (const auto& timing = report.reported_timing()) verdict.candidate_ms = timing->median_ms;
  return verdict;
}

ScoredCandidate rule_reward(const RuleVerdict& verdict, const RuleRewardOptions& options) {
  ScoredCandidate scored;
  scored.compiled = verdict.compiled;
  scored.correct = verdict.correct;
  scored.hacked = verdict.hacked;
  scored.speedup = verdict.speedup;
  scored.candidate_ms = verdict.candidate_ms;
  scored.baseline_ms = verdict.baseline_ms;
  scored.baseline = options.baseline;
  scored.error = verdict.error;
  scored.message = verdict.message;
  const bool earns = verdict.correct && !verdict.hacked;
  const double correctness = earns ? options.correctness : 0.0;
  const double speedup_term = earns ? std::max(0.0, verdict.speedup.value_or(0.0)) : 0.0;
  const double raw = correctness + speedup_term;
  scored.reward = std::min(options.r_max, raw);
  scored.breakdown = {{"rule", raw},
                      {"correctness", correctness},
                      {"speedup_term", speedup_term},
                      {"rubric", nullptr},
                      {"r_max", options.r_max},
                      {"clipped", raw > options.r_max},
                      {"hacked_forced_zero", verdict.hacked},
                      {"source", "serve/rule_reward"}};
  return scored;
}

}  // namespace stitch::serve
