// The engine with a Coder whose model sometimes gives nothing usable, and with K samples per step
// (issue 14): no_usable_output attempts are kept with their reason and fed back, a model that
// never gives a program ends the run no_usable_output, and samples are recorded in sample order
// with the best carried forward.
#include <gtest/gtest.h>

#include "agents/routing.h"
#include "agents/workflow.h"
#include "fake_roles.h"
#include "util/fs.h"

namespace stitch::agents {
namespace {

using nlohmann::json;
using testing::fails;
using testing::FakePlanner;
using testing::FakeVerifier;
using testing::passes_in;

// A Coder answering from a script, one entry per program asked for: the text of a program, or
// "" for a reply without a usable one. Samples are written in reverse order (as parallel replies
// may complete), to show the engine records them by sample index all the same.
class ScriptedCoder final : public Coder {
 public:
  std::vector<std::string> script;
  int samples = 1;
  std::vector<CodeRequest> requests;

  CoderGranularity granularity() const override { return CoderGranularity::whole_program; }
  int samples_per_step() const override { return samples; }
  Result<CodeOutcome> write(const CodeRequest& request) override {
    requests.push_back(request);
    CodeOutcome outcome;
    const std::string program = next < script.size() ? script[next] : "";
    ++next;
    if (program.empty()) {
      outcome.no_usable_output = true;
      outcome.why_not = "no_usable_output (no_code): the reply held prose only";
      outcome.tokens = 40;
      return outcome;
    }
    CodeDraft draft;
    draft.sources = {request.out_dir / "program.cu"};
    draft.tokens = 100;
    STITCH_TRY(write_file_atomic(draft.sources[0], program));
    outcome.draft = draft;
    return outcome;
  }
  std::vector<Result<CodeOutcome>> write_samples(const std::vector<CodeRequest>& batch) override {
    std::vector<Result<CodeOutcome>> outcomes(batch.size(), make_error("unset"));
    const size_t base = next;
    for (size_t i = batch.size(); i-- > 0;) {
      next = base + i;
      outcomes[i] = write(batch[i]);
    }
    next = base + batch.size();
    return outcomes;
  }

 private:
  size_t next = 0;
};

class LlmLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("llm_loop_test_{}_{}", ::getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    auto run = run::RunDir::create(root_, "task");
    ASSERT_TRUE(run.ok()) << run.error().message;
    run_.emplace(std::move(*run));
  }
  void TearDown() override { fs::remove_all(root_); }

  Result<RunState> run_loop(int max_attempts) {
    WorkflowOptions options;
    options.budgets.max_wall_s = 0;
    options.budgets.max_attempts = max_attempts;
    options.budgets.refine = false;
    options.clock = [] { return 0.0; };
    Workflow workflow(*run_, {planner_, coder_, verifier_, nullptr, nullptr}, options);
    return workflow.start("task");
  }

  fs::path root_;
  std::optional<run::RunDir> run_;
  FakePlanner planner_;
  ScriptedCoder coder_;
  FakeVerifier verifier_;
};

TEST_F(LlmLoopTest, AnAttemptWithoutAUsableProgramIsKeptAndItsReasonFedBack) {
  coder_.script = {"", "// program\n"};
  auto state = run_loop(5);
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::succeeded) << state->end_reason;
  ASSERT_EQ(state->attempts.size(), 2u);
  const AttemptRecord& first = state->attempts[0];
  ASSERT_TRUE(first.result);
  EXPECT_TRUE(first.result->no_usable_output);
  EXPECT_EQ(first.result->verdict_name(), "no_usable_output");
  EXPECT_NE(first.result->reason.find("(no_code)"), std::string::npos);
  EXPECT_EQ(first.tokens, 40);
  EXPECT_TRUE(fs::is_directory(run_->root() / first.dir));  // kept, not dropped
  auto recorded = read_json_file(run_->root() / first.dir / "result.json");
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ((*recorded)["result"]["no_usable_output"], true) << recorded->dump();
  // Never verified; the next step is the Coder's again with the reason, not a replan.
  EXPECT_EQ(verifier_.calls, 1);
  EXPECT_EQ(state->plans.size(), 1u);
  ASSERT_EQ(coder_.requests.size(), 2u);
  EXPECT_FALSE(coder_.requests[0].last_unusable);
  ASSERT_TRUE(coder_.requests[1].last_unusable);
  EXPECT_EQ(*coder_.requests[1].last_unusable,
            "attempt 01: no_usable_output (no_code): the reply held prose only");
  EXPECT_FALSE(coder_.requests[1].feedback);  // no verified program to revise yet
  EXPECT_EQ(state->used.attempts, 2);
  EXPECT_EQ(state->used.tokens, 140);
}

TEST_F(LlmLoopTest, AModelThatNeverGivesAProgramEndsTheRunNoUsableOutput) {
  coder_.script = {"", "", ""};
  auto state = run_loop(3);
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::no_usable_output);
  EXPECT_NE(state->end_reason.find("never produced a usable program"), std::string::npos)
      << state->end_reason;
  EXPECT_EQ(state->attempts.size(), 3u);
  EXPECT_EQ(state->plans.size(), 1u);
  EXPECT_EQ(verifier_.calls, 0);
  auto saved = load_run_state(run_->root());
  ASSERT_TRUE(saved.ok());
  EXPECT_EQ(saved->end, RunEnd::no_usable_output);
  EXPECT_TRUE(saved->attempts[2].result->no_usable_output);
}

TEST_F(LlmLoopTest, AFailedProgramAfterAnUnusableReplyIsStillRevisedFromItsFeedback) {
  coder_.script = {"// wrong\n", "", "// right\n"};
  verifier_.script["plan v1 whole program"] = fails(Outcome::wrong, "mismatch");
  auto state = run_loop(3);
  ASSERT_TRUE(state.ok()) << state.error().message;
  ASSERT_EQ(coder_.requests.size(), 3u);
  ASSERT_TRUE(coder_.requests[2].feedback);  // attempt 01's feedback: the last verified one
  EXPECT_EQ(coder_.requests[2].feedback->parent_path().filename(), "01");
  ASSERT_TRUE(coder_.requests[2].last_unusable);
  EXPECT_EQ(coder_.requests[2].last_unusable->rfind("attempt 02:", 0), 0u);
}

TEST_F(LlmLoopTest, SamplesAreRecordedInSampleOrderAndTheBestIsCarriedForward) {
  coder_.samples = 4;
  coder_.script = {"", "// two\n", "// three\n", "// four\n"};
  verifier_.script["plan v1 whole program (sample 2 of 4)"] = passes_in(2.0, 1.9, 2.1);
  verifier_.script["plan v1 whole program (sample 3 of 4)"] = passes_in(1.0, 0.9, 1.1);
  verifier_.script["plan v1 whole program (sample 4 of 4)"] = fails(Outcome::compile_error, "x");
  auto state = run_loop(8);
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::succeeded) << state->end_reason;
  ASSERT_EQ(state->attempts.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const AttemptRecord& sample = state->attempts[static_cast<size_t>(i)];
    EXPECT_EQ(sample.number, i + 1);
    EXPECT_EQ(sample.sample, i);
    EXPECT_EQ(sample.status, AttemptStatus::finished);
    EXPECT_EQ(sample.carried, i == 2);
    EXPECT_TRUE(fs::exists(run_->root() / sample.dir / "result.json"));
  }
  EXPECT_TRUE(state->attempts[0].result->no_usable_output);
  EXPECT_EQ(*read_file(run_->root() / "attempts" / "04" / "src" / "program.cu"), "// four\n");
  EXPECT_EQ(state->best_attempt, 3);
  EXPECT_EQ(state->used.attempts, 4);
  EXPECT_EQ(verifier_.calls, 3);
}

TEST_F(LlmLoopTest, AFailedStepOfSamplesIsRevisedFromItsMostAdvancedSample) {
  coder_.samples = 3;
  coder_.script = {"// a\n", "// b\n", "", "", "", "// fixed\n"};
  verifier_.script["plan v1 whole program (sample 1 of 3)"] = fails(Outcome::compile_error, "x");
  verifier_.script["plan v1 whole program (sample 2 of 3)"] = fails(Outcome::wrong, "y");
  auto state = run_loop(6);
  ASSERT_TRUE(state.ok()) << state.error().message;
  ASSERT_EQ(state->attempts.size(), 6u);
  EXPECT_TRUE(state->attempts[1].carried);
  ASSERT_GE(coder_.requests.size(), 4u);
  ASSERT_TRUE(coder_.requests[3].feedback);
  EXPECT_EQ(coder_.requests[3].feedback->parent_path().filename(), "02");
  EXPECT_FALSE(coder_.requests[3].last_unusable);  // the carried sample had a program
  EXPECT_EQ(state->best_attempt, 6);
}

TEST_F(LlmLoopTest, AStepNeverOpensMoreSamplesThanTheBudgetLeaves) {
  coder_.samples = 8;
  coder_.script = std::vector<std::string>(8, "");
  auto state = run_loop(3);
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->attempts.size(), 3u);
  EXPECT_EQ(state->end, RunEnd::no_usable_output);
}

}  // namespace
}  // namespace stitch::agents
