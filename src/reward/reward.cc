// The combined reward (docs/rubric.md "Combined reward"): rule reward, centred rubric shaping, the
// hacked override and the clip at Rmax.
#include "reward/reward.h"

#include <algorithm>

#include <fmt/format.h>

#include "reward/judge_builtin.h"
#include "reward/program_features.h"

namespace stitch::reward {

double centred(double score) {
  return (std::clamp(score, 1.0, 5.0) - 3.0) / 2.0;
}

Status check_baseline_name(std::string_view baseline) {
  if (baseline == "eager" || baseline == "compile" || baseline == "reduce-overhead") return {};
  return make_error(ErrorKind::bad_input,
                    "baseline '{}': not one of eager, compile, reduce-overhead", baseline);
}

namespace {

// Whether the attempt is hacked, whichever judge scored the rubric: the Verifier's verdict or a
// fatal finding, or PyTorch / Python in the program (a copy of the reference; program_features.h).
bool is_hacked(const AttemptEvidence& evidence) {
  const std::optional<VerifyReport>& verify = evidence.verify;
  if (verify && (verify->outcome == Outcome::hacked || verify->has_fatal_finding())) return true;
  ProgramFeatures features = scan_program(evidence.sources, "");
  return features.python || !features.torch_uses.empty();
}

void set_verdict(const AttemptEvidence& evidence, RewardBreakdown& out) {
  const std::optional<VerifyReport>& verify = evidence.verify;
  if (!verify) {
    out.verdict = "missing";
    out.notes.push_back("no verify.json: rule reward 0");
    return;
  }
  out.verdict = verify->outcome ? std::string(enum_name(*verify->outcome))
                                : std::string(enum_name(verify->state));
  out.compiled = verify->built;
  out.correct = verify->state == VerifyState::verified && verify->passed();
}

}  // namespace

RewardBreakdown combine_reward(const AttemptEvidence& evidence, const RubricScores& rubric,
                               const RewardOptions& options) {
  RewardBreakdown out;
  out.rubric = rubric;
  out.baseline = options.baseline;
  set_verdict(evidence, out);
  out.hacked = is_hacked(evidence);
  if (out.correct) {
    out.speedup = evidence.verify->speedup_vs(options.baseline);
    if (!out.speedup)
      out.notes.push_back(fmt::format("no '{}' baseline timed: speedup term 0", options.baseline));
    out.rule_reward = options.correct_reward + options.speedup_weight * out.speedup.value_or(0);
    for (size_t d = 0; d < kDimensionCount; ++d)
      out.shaping += options.rubric_weights[d] * centred(rubric.dimensions[d].score);
  } else if (out.compiled && evidence.verify->runner_ran) {
    out.rule_reward = options.compiled_reward;
  }
  double total = out.rule_reward + out.shaping;
  out.clipped = total < 0 || total > options.max_reward;
  out.reward = std::clamp(total, 0.0, options.max_reward);
  if (out.hacked) {
    out.reward = 0;
    out.notes.push_back("hacked: reward forced to 0");
  }
  return out;
}

Result<RewardBreakdown> score_attempt(const AttemptEvidence& evidence, const RewardOptions& options,
                                      RubricJudge& judge) {
  STITCH_TRY(check_baseline_name(options.baseline));
  STITCH_ASSIGN_OR_RETURN(RubricScores rubric, judge.judge(evidence));
  RewardBreakdown breakdown = combine_reward(evidence, rubric, options);
  breakdown.notes.insert(breakdown.notes.begin(), evidence.notes.begin(), evidence.notes.end());
  return breakdown;
}

Result<RewardBreakdown> score_attempt(const AttemptEvidence& evidence,
                                      const RewardOptions& options) {
  BuiltinJudge judge;
  return score_attempt(evidence, options, judge);
}

}  // namespace stitch::reward
