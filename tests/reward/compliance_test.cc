// Skill compliance: following feedback (did the attempt change what the suggestion named, and did
// it improve?) and following a plan; and the evidence reader finding the followed attempt in a run
// directory's layout (docs/loop.md).
#include <gtest/gtest.h>

#include <fstream>

#include <unistd.h>

#include "agents/attempt_files.h"
#include "reward/judge_builtin.h"
#include "util/fs.h"

namespace stitch::reward {
namespace {

const fs::path kData = fs::path(STITCH_TEST_DATA_DIR) / "reward" / "data";

VerifyReport verified(Outcome outcome) {
  VerifyReport report;
  report.outcome = outcome;
  report.built = outcome != Outcome::compile_error;
  report.runner_ran = report.built;
  return report;
}

AttemptEvidence following(SuggestionRule rule, VerifyReport before, VerifyReport now,
                          std::string old_code = "old", std::string new_code = "new") {
  AttemptEvidence evidence;
  evidence.sources = {{"program.cu", std::move(new_code)}};
  evidence.verify = std::move(now);
  FollowedAttempt followed;
  followed.dir = "attempts/01";
  followed.feedback.suggestion = {rule, "do the thing"};
  followed.verify = std::move(before);
  followed.sources = {{"program.cu", std::move(old_code)}};
  evidence.followed = std::move(followed);
  return evidence;
}

double compliance(const AttemptEvidence& evidence) {
  return score_skill_compliance(evidence, scan_program(evidence.sources, "")).score;
}

TEST(ComplianceTest, AnUnchangedProgramIgnoredTheFeedback) {
  EXPECT_EQ(compliance(following(SuggestionRule::fix_computation, verified(Outcome::wrong),
                                 verified(Outcome::wrong), "same", "same")),
            1.0);
}

TEST(ComplianceTest, TheNamedProblemGoneScoresFive) {
  VerifyReport hacked = verified(Outcome::hacked);
  hacked.findings.push_back({"runner", {HackKind::side_stream, "cudaStreamCreate", true}});
  EXPECT_EQ(compliance(following(SuggestionRule::remove_hack, hacked, verified(Outcome::passed))),
            5.0);
  EXPECT_EQ(compliance(following(SuggestionRule::remove_hack, hacked, hacked)), 1.0);
  EXPECT_EQ(compliance(following(SuggestionRule::fix_compile_error,
                                 verified(Outcome::compile_error), verified(Outcome::wrong))),
            5.0);
  EXPECT_EQ(compliance(following(SuggestionRule::fix_computation, verified(Outcome::wrong),
                                 verified(Outcome::passed))),
            5.0);
  EXPECT_EQ(compliance(following(SuggestionRule::fix_computation, verified(Outcome::wrong),
                                 verified(Outcome::wrong))),
            2.0);
}

TEST(ComplianceTest, MeasuredImprovementsOfAPassingProgram) {
  VerifyReport before = verified(Outcome::passed), after = verified(Outcome::passed);
  before.launches_per_forward = 12;
  after.launches_per_forward = 3;
  EXPECT_EQ(compliance(following(SuggestionRule::fuse_launches, before, after)), 5.0);
  EXPECT_EQ(compliance(following(SuggestionRule::fuse_launches, after, before)), 2.0);
  before.synced_timing = TimingStats{2.0};
  after.synced_timing = TimingStats{1.0};
  EXPECT_EQ(compliance(following(SuggestionRule::profile_slowest, before, after)), 5.0);
  EXPECT_EQ(compliance(following(SuggestionRule::profile_slowest, after, before)), 2.0);
  EXPECT_EQ(compliance(following(SuggestionRule::keep_going, before, verified(Outcome::wrong))),
            1.0);
}

TEST(ComplianceTest, APlanScoresTheShareOfItsChoicesVisible) {
  plan::Plan plan;
  plan::Subtask subtask;
  subtask.id = "s00_matmul_bias_relu";
  subtask.kernel = "elementwise";
  plan.subtasks = {subtask};
  plan.host.cuda_graph = true;
  EvidenceSources sources{kData / "graph.json", {}, {}};
  auto fused = read_attempt_evidence(kData / "fused_own", sources, nullptr);
  auto library = read_attempt_evidence(kData / "library_only", sources, nullptr);
  ASSERT_TRUE(fused.ok() && library.ok());
  fused->plan = plan;
  library->plan = plan;
  EXPECT_EQ(compliance(*fused), 5.0);
  EXPECT_EQ(compliance(*library), 1.0);
  AttemptEvidence nothing;
  EXPECT_EQ(compliance(nothing), 3.0);
}

// run/graph.json, run/attempts/01 (wrong, with feedback), run/attempts/02 (the retry).
TEST(ComplianceTest, TheReaderFindsTheAttemptWhoseFeedbackWasFollowed) {
  fs::path run = fs::temp_directory_path() / ("stitch_reward_run_" + std::to_string(::getpid()));
  fs::remove_all(run);
  fs::create_directories(run / "attempts");
  fs::copy_file(kData / "graph.json", run / "graph.json");
  for (int number : {1, 2}) {
    fs::path dir = run / "attempts" / fmt::format("{:02d}", number);
    fs::create_directories(dir);
    agents::AttemptRecord record;
    record.number = number;
    record.kind = agents::AttemptKind::integration;
    ASSERT_TRUE(write_json_file(dir / "attempt.json", agents::attempt_intent_to_json(record)).ok());
    std::ofstream(dir / "program.cu") << "__global__ void k" << number << "() {}\n";
    VerifyReport report = verified(number == 1 ? Outcome::wrong : Outcome::passed);
    ASSERT_TRUE(write_verify_report(dir / "verify.json", report).ok());
    if (number == 1) {
      ASSERT_TRUE(write_feedback(dir / "feedback.json", build_feedback(report)).ok());
    }
  }
  auto evidence = read_attempt_evidence(run / "attempts" / "02", {}, nullptr);
  ASSERT_TRUE(evidence.ok()) << evidence.error().message;
  ASSERT_TRUE(evidence->followed);
  EXPECT_EQ(fs::path(evidence->followed->dir).filename(), "01");
  EXPECT_TRUE(evidence->reference);
  EXPECT_EQ(compliance(*evidence), 5.0);  // wrong → passed
  auto slash = read_attempt_evidence((run / "attempts" / "02").string() + "/", {}, nullptr);
  ASSERT_TRUE(slash.ok());
  EXPECT_TRUE(slash->followed && slash->reference) << "a trailing separator finds the run too";
  auto first = read_attempt_evidence(run / "attempts" / "01", {}, nullptr);
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->followed);
  EXPECT_FALSE(read_attempt_evidence(run / "nowhere", {}, nullptr).ok());
  fs::remove_all(run);
}

}  // namespace
}  // namespace stitch::reward
