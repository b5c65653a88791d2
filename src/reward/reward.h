// The rubric reward of one attempt (docs/rubric.md): a rule reward from the Verifier's verdict and
// speedup, plus a shaping term from rubric scores on four dimensions, a hacked attempt forced to
// zero and the total clipped at Rmax. This header is the library's stable API: the reward service
// and `stitchcuda reward` call read_attempt_evidence (evidence.h) and then score_attempt.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "reward/evidence.h"
#include "util/enum_names.h"
#include "util/result.h"

namespace stitch::reward {

// The rubric's four dimensions, in the order docs/rubric.md lists them.
enum class Dimension : uint8_t {
  anti_hacking,
  cuda_engineering,
  operator_coverage,
  skill_compliance
};
inline constexpr std::array<std::string_view, 4> kDimensionNames = {
    "anti_hacking", "cuda_engineering", "operator_coverage", "skill_compliance"};
constexpr const auto& enum_names(Dimension) {
  return kDimensionNames;
}
static_assert(names_every_enumerator(Dimension::skill_compliance));
inline constexpr size_t kDimensionCount = kDimensionNames.size();

// Which judge gave the rubric scores.
enum class JudgeKind : uint8_t { builtin, llm };
inline constexpr std::array<std::string_view, 2> kJudgeKindNames = {"builtin", "llm"};
constexpr const auto& enum_names(JudgeKind) {
  return kJudgeKindNames;
}
static_assert(names_every_enumerator(JudgeKind::llm));

// One dimension's score, 1 (worst) to 5 (best), and why: the facts (built-in judge) or quotes from
// the program (LLM judge) it rests on.
struct DimensionScore {
  Dimension dimension = Dimension::anti_hacking;
  double score = 3;
  std::vector<std::string> evidence;
};

struct RubricScores {
  JudgeKind judge = JudgeKind::builtin;
  std::array<DimensionScore, kDimensionCount> dimensions{};  // indexed by Dimension
  std::vector<std::string> notes;  // what the judge could not see or had to correct
  const DimensionScore& operator[](Dimension d) const { return dimensions[size_t(d)]; }
  DimensionScore& operator[](Dimension d) { return dimensions[size_t(d)]; }
};

// The formula's knobs (docs/rubric.md "Combined reward"); the defaults are the documented ones.
struct RewardOptions {
  std::string baseline = "eager";  // the speedup's baseline: eager, compile, reduce-overhead
  double compiled_reward = 0.1;    // built and ran but not correct
  double correct_reward = 1.0;     // correct
  double speedup_weight = 1.0;     // per unit of speedup over the baseline, when correct
  // Weight of each dimension's centred score (s - 3) / 2 in [-1, 1], applied when correct.
  std::array<double, kDimensionCount> rubric_weights = {0.25, 0.25, 0.25, 0.25};
  double max_reward = 5.0;  // Rmax: the total is clipped to [0, Rmax]
};

// Every term of the reward, so trainers can log them one by one.
struct RewardBreakdown {
  double reward = 0;  // the total, in [0, max_reward]
  bool compiled = false;
  bool correct = false;
  bool hacked = false;  // verdict hacked, or a fatal finding: reward forced to 0
  std::string verdict;  // the outcome's or state's name ("passed", "no_gpu", "missing")
  std::string baseline;
  std::optional<double> speedup;  // over `baseline`; unset when not timed against it
  double rule_reward = 0;
  double shaping = 0;    // sum of the weighted centred rubric scores (0 unless correct)
  bool clipped = false;  // rule_reward + shaping fell outside [0, max_reward]
  RubricScores rubric;
  std::vector<std::string> notes;  // why a term is what it is ("no baseline 'compile' timed")
};

// The centred shaping value of one score: (s - 3) / 2, so 1 → -1, 3 → 0, 5 → +1.
double centred(double score);

// The combined reward of a verdict (from the evidence) and rubric scores.
RewardBreakdown combine_reward(const AttemptEvidence& evidence, const RubricScores& rubric,
                               const RewardOptions& options);

// The judge that scores the rubric: built-in (judge_builtin.h) or an LLM (judge_llm.h).
class RubricJudge {
 public:
  virtual ~RubricJudge() = default;
  virtual Result<RubricScores> judge(const AttemptEvidence& evidence) = 0;
};

// The built-in judge's scores combined: what the reward service calls per request.
Result<RewardBreakdown> score_attempt(const AttemptEvidence& evidence,
                                      const RewardOptions& options);
// The same with a given judge (the LLM judge, or a fake).
Result<RewardBreakdown> score_attempt(const AttemptEvidence& evidence, const RewardOptions& options,
                                      RubricJudge& judge);

// The breakdown as JSON (format "stitchcuda.reward", version 1) and read back, beside each other.
nlohmann::json breakdown_to_json(const RewardBreakdown& breakdown);
Result<RewardBreakdown> breakdown_from_json(const nlohmann::json& doc);

// The options' baseline name checked: eager, compile or reduce-overhead.
Status check_baseline_name(std::string_view baseline);

}  // namespace stitch::reward
