// The loop of `run` and `bench` over fake roles (tests/agents/fake_roles.h) and a fake export: a
// run that passes is exported and summed up in summary.json; one that ended without a GPU is taken
// up again by a resume where there is one, and returned as it is where there is none; a failed
// export is a note, not an Error; the machinery failing marks the run failed.
#include "app/loop_session.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "agents/fake_roles.h"
#include "expect_error.h"
#include "temp_dir.h"
#include "util/fs.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;
namespace fakes = agents::testing;

class LoopSession : public ::testing::Test {
 protected:
  void SetUp() override {
    auto run = run::RunDir::create(dir_.path() / "runs", "19_ReLU");
    ASSERT_TRUE(run.ok()) << run.error().message;
    run_.emplace(std::move(*run));
    budgets_.max_wall_s = 0;
    budgets_.refine = false;
  }
  LoopDeps deps(bool gpu) {
    return {{planner_, coder_, verifier_, nullptr, nullptr},
            gpu,
            [this](const agents::RunState& state) -> Result<agents::BestExport> {
              exported_.push_back(state.best_attempt.value_or(-1));
              if (!export_error_.empty()) return make_error("{}", export_error_);
              return agents::BestExport{run_->root() / "best", "best/ from attempt 1"};
            }};
  }
  Result<LoopOutcome> loop(bool gpu, bool resume) {
    return run_loop(*run_, deps(gpu), budgets_, resume,
                    [this](const agents::WorkflowEvent& e) { events_.push_back(e.name); });
  }
  json summary() const { return run_->read_json("summary.json").value(); }

  TempDir dir_{"loop_session"};
  std::optional<run::RunDir> run_;
  agents::Budgets budgets_;
  fakes::FakePlanner planner_;
  fakes::FakeCoder coder_;
  fakes::FakeVerifier verifier_;
  std::vector<int> exported_;
  std::string export_error_;
  std::vector<std::string> events_;
};

TEST_F(LoopSession, APassingRunIsExportedAndSummedUp) {
  auto outcome = loop(true, false);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_EQ(outcome->state.end, agents::RunEnd::succeeded);
  EXPECT_EQ(outcome->state.task, "19_ReLU") << "summary.json's task, not the directory's name";
  EXPECT_EQ(exported_, std::vector<int>{1});
  EXPECT_EQ(outcome->best_dir, run_->root() / "best");
  const json done = summary();
  EXPECT_EQ(done["status"], "complete");
  EXPECT_EQ(done["stage"], "loop");
  EXPECT_EQ(done["end"], "succeeded");
  EXPECT_EQ(done["best_ms"], 1.0);
  EXPECT_EQ(done["speedups"]["eager"], 2.0);
  EXPECT_EQ(done["export"], "best/ from attempt 1");
}

TEST_F(LoopSession, ANoGpuRunIsTakenUpAgainByAResumeWhereThereIsOne) {
  verifier_.script["integration try 1"] = fakes::ends(VerifyState::no_gpu, "no CUDA device");
  auto first = loop(false, false);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->state.end, agents::RunEnd::no_gpu);
  EXPECT_TRUE(exported_.empty());
  EXPECT_EQ(summary()["status"], "complete");
  EXPECT_EQ(summary()["end"], "no_gpu");
  const int calls = verifier_.calls;

  // Still no GPU: the finished run comes back as it was, nothing verified again.
  auto again = loop(false, true);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->state.end, agents::RunEnd::no_gpu);
  EXPECT_EQ(verifier_.calls, calls);

  // A GPU now: the program the run built is verified, and passes.
  verifier_.script.clear();
  auto resumed = loop(true, true);
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->state.end, agents::RunEnd::succeeded);
  EXPECT_GT(verifier_.calls, calls);
  EXPECT_EQ(exported_.size(), 1u);
  EXPECT_NE(std::find(events_.begin(), events_.end(), "run.reopen"), events_.end());
  EXPECT_EQ(summary()["end"], "succeeded");
}

TEST_F(LoopSession, AFailedExportIsANoteNotAnError) {
  export_error_ = "nvcc: exit code 2";
  auto outcome = loop(true, false);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_FALSE(outcome->best_dir);
  EXPECT_EQ(outcome->export_note, "exporting best/ failed: nvcc: exit code 2");
  EXPECT_EQ(summary()["export"], outcome->export_note);
  EXPECT_EQ(summary()["status"], "complete");
}

TEST_F(LoopSession, TheMachineryFailingMarksTheRunFailed) {
  verifier_.script["integration try 1"] =
      fakes::ends(VerifyState::infrastructure_error, "judge serve: CUDA out of memory");
  auto outcome = loop(true, false);
  ASSERT_TRUE(outcome.ok()) << outcome.error().message;
  EXPECT_EQ(outcome->state.end, agents::RunEnd::infrastructure_error);
  EXPECT_TRUE(exported_.empty());
  EXPECT_EQ(summary()["status"], "failed");

  // A run the engine cannot take up (no state.json) is an Error, and says so in summary.json.
  auto other = run::RunDir::create(dir_.path() / "runs", "other");
  ASSERT_TRUE(other.ok());
  run_.emplace(std::move(*other));
  auto resumed = loop(true, true);
  ASSERT_FALSE(resumed.ok());
  EXPECT_EQ(summary()["status"], "failed");
  EXPECT_NE(summary()["error"].get<std::string>().find("no state.json"), std::string::npos);
}

// The LLM roles' options (llm/config.h) through the loop's settings: checked before any work, an
// LLM Coder runs without refine, and bench's workers get the same flags.
TEST(LoopSettingsLlm, LlmRolesAreCheckedAndCarried) {
  using testing::is_error;
  LoopOptions options;
  options.llm.coder = "llm";
  EXPECT_TRUE(is_error(loop_settings(options), ErrorKind::bad_input,
                       "the coder is set to llm but has no api_base"));
  options.llm.api_base = "http://127.0.0.1:9/v1";
  options.llm.coder_model = "m";
  auto settings = loop_settings(options);
  ASSERT_TRUE(settings.ok()) << settings.error().message;
  EXPECT_EQ(settings->llm.role(llm::LoopRole::coder).kind, llm::RoleKind::llm);
  EXPECT_FALSE(settings->budgets.refine);
  const std::vector<std::string> args = loop_arguments(options);
  const std::vector<std::string> tail = {
      "--coder", "llm", "--api-base", "http://127.0.0.1:9/v1", "--coder-model", "m"};
  ASSERT_GE(args.size(), tail.size());
  EXPECT_EQ(std::vector<std::string>(args.end() - tail.size(), args.end()), tail);

  options.llm.planner = "llm";
  options.llm.planner_model = "p";
  options.llm.verifier = "llm";
  options.llm.verifier_model = "v";
  ASSERT_TRUE(loop_settings(options).ok());  // every role an LLM role
  options.llm.coder = "builtin";
  EXPECT_TRUE(is_error(loop_settings(options), ErrorKind::bad_input,
                       "--planner llm needs --coder llm: the built-in Coder implements only"));
  options.llm.coder = "hybrid";
  EXPECT_TRUE(is_error(loop_settings(options), ErrorKind::bad_input,
                       "the hybrid Coder starts from the built-in plan"));
  options.llm.planner = "builtin";
  options.llm.coder = "hybrid";
  options.hybrid_hot = 2;
  auto hybrid = loop_settings(options);
  ASSERT_TRUE(hybrid.ok()) << hybrid.error().message;
  EXPECT_EQ(hybrid->llm.role(llm::LoopRole::coder).kind, llm::RoleKind::hybrid);
  EXPECT_EQ(hybrid->hybrid_hot, 2);
  EXPECT_FALSE(hybrid->budgets.refine);
  const std::vector<std::string> hybrid_args = loop_arguments(options);
  const std::vector<std::string> hot = {"--hybrid-hot", "2"};
  EXPECT_NE(std::search(hybrid_args.begin(), hybrid_args.end(), hot.begin(), hot.end()),
            hybrid_args.end());
  LoopOptions builtin;
  ASSERT_TRUE(loop_settings(builtin).ok());
  EXPECT_TRUE(loop_settings(builtin)->budgets.refine);
}

}  // namespace
}  // namespace stitch::app
