// FakeScorer (fake_scorer.h).
#include "serve/fake_scorer.h"

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "serve/rule_reward.h"

namespace stitch::serve {
namespace {

// The number after `marker=` in `source`, or nullopt.
std::optional<double> marker_value(const std::string& source, const std::string& marker) {
  const size_t at = source.find(marker + "=");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(source.c_str() + at + marker.size() + 1, nullptr);
}

bool has(const std::string& source, const char* marker) {
  return source.find(marker) != std::string::npos;
}

}  // namespace

Result<ScoredCandidate> FakeScorer::score(const Candidate& candidate, const ScoreContext& context) {
  ++scored_;
  const std::string& source = candidate.source;
  const double sleep_ms = marker_value(source, "FAKE_SLEEP_MS").value_or(default_sleep_ms_);
  const double until = context.clock.now_s() + sleep_ms / 1000.0;
  while (context.clock.now_s() < until) {
    if (context.cancel.stop_requested(context.clock.now_s()))
      return make_error(ErrorKind::work_failed, "fake scoring stopped");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (candidate.task == "unknown")
    return make_error(ErrorKind::bad_input, "unknown task '{}'", candidate.task);
  if (has(source, "FAKE_INFRA")) return make_error(ErrorKind::machine, "fake machinery failure");
  if (has(source, "FAKE_NO_GPU")) {
    RuleVerdict built;
    built.compiled = true;
    built.error = ErrorCode::no_gpu;
    built.message = "fake: no GPU";
    return rule_reward(built, RuleRewardOptions{});
  }

  RuleVerdict verdict;
  verdict.compiled = !has(source, "FAKE_COMPILE_ERROR");
  verdict.hacked = verdict.compiled && has(source, "FAKE_HACKED");
  verdict.correct = verdict.compiled && !verdict.hacked && !has(source, "FAKE_WRONG");
  verdict.error = !verdict.compiled  ? ErrorCode::compile_error
                  : verdict.hacked   ? ErrorCode::hacked
                  : !verdict.correct ? ErrorCode::wrong
                                     : ErrorCode::none;
  if (verdict.correct) {
    verdict.speedup = marker_value(source, "FAKE_SPEEDUP").value_or(1.5);
    verdict.baseline_ms = 1.0;
    verdict.candidate_ms = 1.0 / *verdict.speedup;
  }
  verdict.message =
      verdict.correct ? "fake: passed" : "fake: " + std::string(enum_name(verdict.error));
  return rule_reward(verdict, RuleRewardOptions{});
}

}  // namespace stitch::serve
