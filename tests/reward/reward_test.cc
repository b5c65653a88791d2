// The combined reward (docs/rubric.md "Combined reward"): hacked → 0, the clip at Rmax, monotone in
// speedup, the centring, what an incorrect attempt gets, and the breakdown's JSON.
#include <gtest/gtest.h>

#include "reward/reward.h"

namespace stitch::reward {
namespace {

AttemptEvidence passed_with(double speedup) {
  AttemptEvidence evidence;
  VerifyReport verify;
  verify.state = VerifyState::verified;
  verify.outcome = Outcome::passed;
  verify.built = true;
  verify.runner_ran = true;
  verify.speedups = {{"eager", 1.0, 1.0 / speedup, speedup}};
  evidence.verify = verify;
  evidence.sources = {{"program.cu", "__global__ void k() {}"}};
  return evidence;
}

RubricScores all_scores(double score, JudgeKind judge = JudgeKind::llm) {
  RubricScores rubric;
  rubric.judge = judge;
  for (size_t d = 0; d < kDimensionCount; ++d)
    rubric.dimensions[d] = {Dimension(d), score, {}};
  return rubric;
}

TEST(RewardTest, HackedIsZero) {
  AttemptEvidence evidence = passed_with(3.0);
  evidence.verify->outcome = Outcome::hacked;
  RewardBreakdown b = combine_reward(evidence, all_scores(5), {});
  EXPECT_TRUE(b.hacked);
  EXPECT_EQ(b.reward, 0.0);
}

TEST(RewardTest, FatalFindingIsZeroEvenWhenOutputsMatched) {
  AttemptEvidence evidence = passed_with(3.0);
  evidence.verify->findings.push_back({"runner", {HackKind::output_cache, "reused", true}});
  EXPECT_EQ(combine_reward(evidence, all_scores(5), {}).reward, 0.0);
  // A warning is not a hack.
  evidence.verify->findings.back().finding.fatal = false;
  EXPECT_GT(combine_reward(evidence, all_scores(5), {}).reward, 0.0);
}

TEST(RewardTest, PyTorchInTheProgramIsZeroWhateverTheJudgeSays) {
  AttemptEvidence evidence = passed_with(2.0);
  evidence.sources = {{"program.cu", "#include <torch/extension.h>\n__global__ void k() {}\n"}};
  RewardBreakdown b = combine_reward(evidence, all_scores(5, JudgeKind::llm), {});
  EXPECT_TRUE(b.hacked);
  EXPECT_EQ(b.reward, 0.0);
  evidence.sources = {{"model_new.py", "import torch\n"}};
  EXPECT_EQ(combine_reward(evidence, all_scores(5), {}).reward, 0.0);
}

TEST(RewardTest, ClipsAtRmax) {
  RewardBreakdown b = combine_reward(passed_with(100.0), all_scores(5), {});
  EXPECT_EQ(b.reward, 5.0);
  EXPECT_TRUE(b.clipped);
  RewardOptions options;
  options.max_reward = 3.0;
  EXPECT_EQ(combine_reward(passed_with(100.0), all_scores(5), options).reward, 3.0);
}

TEST(RewardTest, MonotoneInSpeedup) {
  double previous = -1;
  for (double speedup : {0.05, 0.3, 0.9, 1.0, 1.5, 2.0, 3.0, 3.9, 4.0, 8.0, 50.0}) {
    for (double score : {1.0, 3.0, 5.0}) {
      double reward = combine_reward(passed_with(speedup), all_scores(score), {}).reward;
      double faster = combine_reward(passed_with(speedup * 1.1), all_scores(score), {}).reward;
      EXPECT_GE(faster, reward) << "speedup " << speedup << " score " << score;
      if (faster < 5.0) {
        EXPECT_GT(faster, reward) << "below the clip it strictly grows";
      }
    }
    double reward = combine_reward(passed_with(speedup), all_scores(3), {}).reward;
    EXPECT_GE(reward, previous);
    previous = reward;
  }
}

TEST(RewardTest, CentringAsDocumented) {
  EXPECT_EQ(centred(1), -1.0);
  EXPECT_EQ(centred(2), -0.5);
  EXPECT_EQ(centred(3), 0.0);
  EXPECT_EQ(centred(5), 1.0);
  EXPECT_EQ(centred(9), 1.0);  // out-of-range scores are clamped first
  // rule = 1 + speedup; shaping = sum of 0.25 * centred(s).
  RewardBreakdown middling = combine_reward(passed_with(1.5), all_scores(3), {});
  EXPECT_DOUBLE_EQ(middling.rule_reward, 2.5);
  EXPECT_DOUBLE_EQ(middling.shaping, 0.0);
  EXPECT_DOUBLE_EQ(middling.reward, 2.5);
  EXPECT_DOUBLE_EQ(combine_reward(passed_with(1.5), all_scores(5), {}).reward, 3.5);
  EXPECT_DOUBLE_EQ(combine_reward(passed_with(1.5), all_scores(1), {}).reward, 1.5);
  RubricScores mixed = all_scores(3);
  mixed[Dimension::operator_coverage].score = 1;  // one dimension at 1: -0.25
  EXPECT_DOUBLE_EQ(combine_reward(passed_with(1.5), mixed, {}).shaping, -0.25);
}

TEST(RewardTest, IncorrectAttemptsGetTheRuleRewardOnly) {
  AttemptEvidence wrong = passed_with(2.0);
  wrong.verify->outcome = Outcome::wrong;
  RewardBreakdown b = combine_reward(wrong, all_scores(5), {});
  EXPECT_DOUBLE_EQ(b.reward, 0.1);
  EXPECT_EQ(b.shaping, 0.0);
  EXPECT_FALSE(b.correct);
  AttemptEvidence broken = passed_with(2.0);
  broken.verify->outcome = Outcome::compile_error;
  broken.verify->built = false;
  broken.verify->runner_ran = false;
  EXPECT_EQ(combine_reward(broken, all_scores(5), {}).reward, 0.0);
  AttemptEvidence missing;
  RewardBreakdown none = combine_reward(missing, all_scores(5), {});
  EXPECT_EQ(none.reward, 0.0);
  EXPECT_EQ(none.verdict, "missing");
}

TEST(RewardTest, ANamedBaselineThatWasNotTimedGivesNoSpeedupTerm) {
  RewardOptions options;
  options.baseline = "compile";
  RewardBreakdown b = combine_reward(passed_with(2.0), all_scores(3), options);
  EXPECT_FALSE(b.speedup);
  EXPECT_DOUBLE_EQ(b.reward, 1.0);
  ASSERT_FALSE(b.notes.empty());
  EXPECT_NE(b.notes.back().find("compile"), std::string::npos);
  EXPECT_TRUE(check_baseline_name("reduce-overhead").ok());
  EXPECT_FALSE(check_baseline_name("fastest").ok());
}

TEST(RewardTest, BreakdownJsonRoundTrips) {
  RubricScores rubric = all_scores(4);
  rubric[Dimension::cuda_engineering].evidence = {"+1.0 own kernels"};
  rubric.notes = {"no SASS"};
  RewardBreakdown b = combine_reward(passed_with(1.7), rubric, {});
  auto back = breakdown_from_json(breakdown_to_json(b));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(breakdown_to_json(*back), breakdown_to_json(b));
  nlohmann::json broken = breakdown_to_json(b);
  broken["rubric"]["scores"].erase("skill_compliance");
  EXPECT_FALSE(breakdown_from_json(broken).ok());
}

}  // namespace
}  // namespace stitch::reward
