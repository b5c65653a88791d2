// A verification's verdict keys (the real scorer's reply takes them from here, its reward from
// src/reward) and the rule reward the fake scorer answers (docs/serve.md "Reward"). A hacked or
// incorrect program scores 0; a correct one scores
//   min(r_max, correctness + speedup)   with correctness = 1 and speedup vs the named baseline
// (0 when the baseline was not timed), so the reward is monotone in speedup and clipped at Rmax
// = 5.
#pragma once

#include <optional>
#include <string>

#include "serve/contracts.h"
#include "verify/verify_report.h"

namespace stitch::serve {

struct RuleRewardOptions {
  std::string baseline = "eager";  // a VerifyReport baseline mode
  double correctness = 1.0;
  double r_max = 5.0;
};

// What the rule reward reads of a verification.
struct RuleVerdict {
  bool compiled = false;
  bool correct = false;
  bool hacked = false;
  std::optional<double> speedup;
  std::optional<double> candidate_ms;
  std::optional<double> baseline_ms;
  ErrorCode error = ErrorCode::none;
  std::string message;
};

// The verdict of verify.json: the outcome's error code, the reason as message, and the speedup
// against `baseline`.
RuleVerdict rule_verdict(const VerifyReport& report, const std::string& baseline);

// The reward and its breakdown {rule, correctness, speedup_term, r_max, clipped, baseline}.
ScoredCandidate rule_reward(const RuleVerdict& verdict, const RuleRewardOptions& options);

}  // namespace stitch::serve
