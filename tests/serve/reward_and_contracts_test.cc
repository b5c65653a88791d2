// The rule reward and the reply contract: every reply carries the same keys.
#include <gtest/gtest.h>

#include "serve/contracts.h"
#include "serve/rule_reward.h"

namespace stitch::serve {
namespace {

RuleVerdict correct_with(double speedup) {
  RuleVerdict verdict;
  verdict.compiled = verdict.correct = true;
  verdict.speedup = speedup;
  return verdict;
}

TEST(ServeRuleReward, HackedIsZeroWhateverTheSpeedup) {
  RuleVerdict verdict = correct_with(40);
  verdict.hacked = true;
  ScoredCandidate scored = rule_reward(verdict, {});
  EXPECT_EQ(scored.reward, 0);
  EXPECT_TRUE(scored.breakdown["hacked_forced_zero"].get<bool>());
}

TEST(ServeRuleReward, WrongIsZeroCorrectEarnsCorrectnessPlusSpeedup) {
  RuleVerdict wrong = correct_with(3);
  wrong.correct = false;
  EXPECT_EQ(rule_reward(wrong, {}).reward, 0);
  EXPECT_DOUBLE_EQ(rule_reward(correct_with(1.5), {}).reward, 2.5);
}

TEST(ServeRuleReward, MonotoneInSpeedupAndClippedAtRmax) {
  double previous = -1;
  for (double speedup : {0.1, 0.5, 1.0, 2.0, 3.9}) {
    const double reward = rule_reward(correct_with(speedup), {}).reward;
    EXPECT_GT(reward, previous) << speedup;
    previous = reward;
  }
  ScoredCandidate clipped = rule_reward(correct_with(9), {});
  EXPECT_DOUBLE_EQ(clipped.reward, 5.0);
  EXPECT_TRUE(clipped.breakdown["clipped"].get<bool>());
}

TEST(ServeRuleReward, ReadsTheNamedBaselineOfAReport) {
  VerifyReport report;
  report.built = true;
  report.outcome = Outcome::passed;
  report.speedups = {{"compile_default", 4.0, 1.0, 4.0}, {"eager", 2.0, 1.0, 2.0}};
  RuleVerdict verdict = rule_verdict(report, "eager");
  EXPECT_TRUE(verdict.correct);
  EXPECT_EQ(verdict.speedup, 2.0);
  report.outcome = Outcome::hacked;
  EXPECT_EQ(rule_verdict(report, "eager").error, ErrorCode::hacked);
  report.outcome = Outcome::compile_error;
  report.built = false;
  EXPECT_EQ(rule_verdict(report, "eager").error, ErrorCode::compile_error);
}

void expect_reply_keys(const nlohmann::json& doc) {
  ASSERT_EQ(doc.size(), kReplyKeys.size()) << doc.dump();
  for (std::string_view key : kReplyKeys)
    EXPECT_TRUE(doc.contains(key)) << key;
}

TEST(ServeReplyContract, PendingRefusedAndScoredRepliesHaveTheSameKeysAndRoundTrip) {
  ScoreReply scored = pending_reply({"r1", "t", "src", 0}, RequestStatus::done);
  scored.scored = rule_reward(correct_with(2), {});
  for (const ScoreReply& reply : {pending_reply({"r1", "t", "src", 0}, RequestStatus::queued),
                                  refused_reply("r2", ErrorCode::queue_full, "full"), scored}) {
    nlohmann::json doc = reply_to_json(reply);
    expect_reply_keys(doc);
    auto back = reply_from_json(doc);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(reply_to_json(*back), doc);
  }
}

TEST(ServeCandidateContract, RefusesMissingFieldsAndBadTimeouts) {
  EXPECT_FALSE(candidate_from_json({{"task", "t"}, {"source", "s"}}).ok());
  EXPECT_FALSE(candidate_from_json({{"request_id", "r"}, {"task", "t"}, {"source", ""}}).ok());
  EXPECT_FALSE(
      candidate_from_json({{"request_id", "r"}, {"task", "t"}, {"source", "s"}, {"timeout_s", "x"}})
          .ok());
  for (const char* id : {"a/b", "a b", "a\tb"})
    EXPECT_FALSE(candidate_from_json({{"request_id", id}, {"task", "t"}, {"source", "s"}}).ok())
        << id;
  auto ok =
      candidate_from_json({{"request_id", "step-12:sample.3"}, {"task", "t"}, {"source", "s"}});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->timeout_s, 0);
}

}  // namespace
}  // namespace stitch::serve
