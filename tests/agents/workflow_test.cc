// The workflow engine with fake roles: routing through subtasks, integration, refine and replans,
// budgets, state persistence, and resume after an interruption at every point of an attempt.
#include "agents/workflow.h"

#include <gtest/gtest.h>

#include "agents/routing.h"
#include "fake_roles.h"
#include "run/events.h"
#include "util/fs.h"

namespace stitch::agents {
namespace {

using nlohmann::json;
using testing::FakeAnswer;
using testing::FakeCoder;
using testing::FakePlanner;
using testing::FakeProfiler;
using testing::FakeRefiner;
using testing::FakeVerifier;

class WorkflowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("workflow_test_{}_{}", ::getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    auto run = run::RunDir::create(root_, "task");
    ASSERT_TRUE(run.ok()) << run.error().message;
    run_.emplace(std::move(*run));
  }
  void TearDown() override { fs::remove_all(root_); }

  Workflow workflow(WorkflowOptions options = {}) {
    options.budgets.max_wall_s = 0;
    options.clock = [this] { return clock_s_; };
    if (!options.on_event)
      options.on_event = [this](const WorkflowEvent& event) { events_.push_back(event.name); };
    return Workflow(*run_, {planner_, coder_, verifier_, &profiler_, &refiner_},
                    std::move(options));
  }

  fs::path root_;
  std::optional<run::RunDir> run_;
  double clock_s_ = 0;
  std::vector<std::string> events_;
  FakePlanner planner_;
  FakeCoder coder_;
  FakeVerifier verifier_;
  FakeProfiler profiler_;
  FakeRefiner refiner_;
};

std::vector<std::string> attempt_labels(const RunState& state) {
  std::vector<std::string> labels;
  for (const auto& attempt : state.attempts)
    labels.push_back(attempt.label);
  return labels;
}

TEST_F(WorkflowTest, WholeProgramPassesThenRefineAcceptsOnlyBeyondTheSpread) {
  refiner_.list = {{"block 512", {{"refine", 512}}},     // 0.80 ms: clearly faster → accepted
                   {"block 128", {{"refine", 128}}},     // 0.79 ms but spread 0.75..0.85 → no
                   {"graph off", {{"refine", "off"}}}};  // wrong → rejected
  verifier_.script["refine:512"] = testing::passes_in(0.80, 0.79, 0.81);
  verifier_.script["refine:128"] = testing::passes_in(0.79, 0.70, 0.88);
  verifier_.script["refine:\"off\""] = testing::fails(Outcome::wrong, "output 0 differs");
  auto state = workflow().start("task");
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::succeeded);
  EXPECT_EQ(state->phase, Phase::finished);
  ASSERT_EQ(state->attempts.size(), 4u);
  EXPECT_EQ(state->attempts[0].kind, AttemptKind::integration);
  EXPECT_TRUE(state->attempts[1].accepted);
  EXPECT_FALSE(state->attempts[2].accepted);
  EXPECT_FALSE(state->attempts[3].accepted);
  EXPECT_EQ(state->best_attempt, 2);
  EXPECT_EQ(state->refine.before_ms, 1.0);
  EXPECT_EQ(profiler_.calls, 1);
  ASSERT_TRUE(refiner_.seen_profile.has_value());
  // A refine candidate is applied on top of the best program's variant.
  EXPECT_EQ(coder_.requests[1].variant, (json{{"try", 1}, {"refine", 512}}));
  // The later candidates start from the new best (attempt 2's variant).
  EXPECT_EQ(coder_.requests[2].variant, (json{{"try", 1}, {"refine", 128}}));
  // Persisted: state.json reads back to the same state, every attempt has its files.
  auto loaded = load_run_state(root_ / run_->root().filename());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(run_state_to_json(*loaded), run_state_to_json(*state));
  for (const auto& attempt : state->attempts)
    for (const char* file : {"attempt.json", "draft.json", "result.json", "feedback.json"})
      EXPECT_TRUE(fs::exists(run_->root() / attempt.dir / file)) << attempt.dir << "/" << file;
  EXPECT_TRUE(fs::exists(run_->root() / "plans/plan.v1.json"));
  EXPECT_TRUE(fs::exists(run_->root() / "plan.json"));
  EXPECT_TRUE(fs::exists(run_->root() / state->attempts[0].dir / "refine_profile.json"));
  auto logged = run::read_events(run_->root() / "events.jsonl");
  ASSERT_TRUE(logged.ok());
  EXPECT_EQ(logged->back()["event"], "loop.run.end");
  EXPECT_EQ(logged->back()["end"], "succeeded");
}

TEST_F(WorkflowTest, PerSubtaskCoderRetriesWithFeedbackThenMovesOnThenIntegrates) {
  coder_.mode = CoderGranularity::per_subtask;
  verifier_.script["subtask:0 try 1"] = {VerifyState::verified, Outcome::compile_error, 0, 0, 0,
                                         "nvcc: error"};
  verifier_.script["subtask:1 try 1"] = testing::fails(Outcome::wrong, "mismatch");
  refiner_.list = {};
  auto state = workflow().start("task");
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::succeeded);
  EXPECT_EQ(attempt_labels(*state),
            (std::vector<std::string>{"subtask:0 try 1", "subtask:0 try 2", "subtask:1 try 1",
                                      "subtask:1 try 2", "integration try 1"}));
  // The retry got the failed attempt's feedback; the first try of a scope got none.
  ASSERT_EQ(coder_.requests.size(), 5u);
  EXPECT_FALSE(coder_.requests[0].feedback.has_value());
  ASSERT_TRUE(coder_.requests[1].feedback.has_value());
  EXPECT_EQ(coder_.requests[1].feedback->parent_path().filename(), "01");
  EXPECT_FALSE(coder_.requests[2].feedback.has_value());
  EXPECT_EQ(coder_.requests[3].feedback->parent_path().filename(), "03");
  EXPECT_EQ(state->subtasks[0].status, SubtaskStatus::passed);
  EXPECT_EQ(state->subtasks[1].status, SubtaskStatus::passed);
  EXPECT_EQ(state->best_attempt, 5);
}

TEST_F(WorkflowTest, RepeatedFailureReplansAndTheNewPlanPasses) {
  for (int i = 1; i <= 3; ++i)
    verifier_.script[fmt::format("integration try {}", i)] = {
        VerifyState::verified, Outcome::wrong, 0, 0, 0, "bad"};
  // Under plan v2 the try numbers restart; make v2's first try pass by giving the script a
  // distinct key: the Coder's label is the same, so count calls instead.
  int calls = 0;
  auto state = [&] {
    WorkflowOptions options;
    options.budgets.refine = false;
    options.checkpoint = [&](std::string_view point, int) {
      if (point == "after_code" && ++calls == 4) verifier_.script.clear();
    };
    return workflow(options).start("task");
  }();
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::succeeded);
  ASSERT_EQ(state->plans.size(), 2u);
  EXPECT_NE(state->plans[1].reason.find("failed 3 times in a row"), std::string::npos)
      << state->plans[1].reason;
  ASSERT_EQ(planner_.requests.size(), 2u);
  EXPECT_EQ(planner_.requests[1].tried_options.size(), 1u);
  EXPECT_TRUE(planner_.requests[1].last_feedback.has_value());
  EXPECT_EQ(state->best_attempt, 4);
  EXPECT_EQ(state->attempts[3].plan_version, 2);
}

TEST_F(WorkflowTest, ReplansRunOutAndTheRunFails) {
  for (int i = 1; i <= 3; ++i)
    verifier_.script[fmt::format("integration try {}", i)] = {
        VerifyState::verified, Outcome::wrong, 0, 0, 0, "bad"};
  WorkflowOptions options;
  options.budgets.max_replans = 1;
  options.budgets.max_attempts = 100;
  auto state = workflow(options).start("task");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->end, RunEnd::failed);
  EXPECT_EQ(state->attempts.size(), 6u);
  EXPECT_NE(state->end_reason.find("no replans left"), std::string::npos) << state->end_reason;
  EXPECT_FALSE(state->best_attempt.has_value());
}

// Issue 13: a program failed with the same reason nine times in a row. The same program failing
// the same way twice replans at once; a replan that writes it again ends the run with the reason.
TEST_F(WorkflowTest, TheSameProgramFailingTheSameWayReplansOnceThenFails) {
  coder_.fixed_program = "// one program, whatever the feedback\n";
  const std::string reason = "output 0: not the layout this program was generated for";
  for (int i = 1; i <= 3; ++i)
    verifier_.script[fmt::format("integration try {}", i)] = {
        VerifyState::verified, Outcome::wrong, 0, 0, 0, reason};
  WorkflowOptions options;
  options.budgets.max_attempts = 100;
  auto state = workflow(options).start("task");
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::failed);
  // v1: two attempts (the second repeats the first); v2: one, which repeats them again.
  ASSERT_EQ(state->attempts.size(), 3u);
  EXPECT_EQ(state->attempts[2].plan_version, 2);
  ASSERT_EQ(state->plans.size(), 2u);
  EXPECT_NE(state->plans[1].reason.find("attempts 01 and 02 ran the same program"),
            std::string::npos)
      << state->plans[1].reason;
  EXPECT_NE(state->end_reason.find(reason), std::string::npos) << state->end_reason;
  EXPECT_NE(state->end_reason.find("did not change the program"), std::string::npos)
      << state->end_reason;
  EXPECT_EQ(state->attempts[0].program_digest, state->attempts[2].program_digest);
  EXPECT_EQ(state->attempts[0].program_digest.size(), 64u);
}

// The same program failing for different reasons (e.g. a flaky runtime error) is not a repeat:
// the usual three tries per scope apply.
TEST_F(WorkflowTest, TheSameProgramFailingDifferentlyRetriesAsUsual) {
  coder_.fixed_program = "// one program\n";
  for (int i = 1; i <= 3; ++i)
    verifier_.script[fmt::format("integration try {}", i)] = {
        VerifyState::verified, Outcome::runtime_error, 0, 0, 0, fmt::format("error {}", i)};
  WorkflowOptions options;
  options.budgets.max_replans = 0;
  auto state = workflow(options).start("task");
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::failed);
  EXPECT_EQ(state->attempts.size(), 3u);
  EXPECT_NE(state->end_reason.find("failed 3 times in a row"), std::string::npos)
      << state->end_reason;
}

TEST_F(WorkflowTest, StagnantCoderTriggersAReplanAndAnExhaustedPlannerEndsTheRun) {
  coder_.stagnate_after["integration"] = 1;
  verifier_.script["integration try 1"] = {VerifyState::verified, Outcome::runtime_error, 0, 0, 0,
                                           "illegal address"};
  planner_.max_versions = 2;
  auto state = workflow().start("task");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->end, RunEnd::failed);
  EXPECT_EQ(state->plans.size(), 2u);
  EXPECT_NE(state->plans[1].reason.find("stagnation"), std::string::npos);
  EXPECT_NE(state->end_reason.find("no other plan"), std::string::npos) << state->end_reason;
  // The stagnant tries left no attempt directories behind, nor anything set aside.
  EXPECT_EQ(state->attempts.size(), 2u);
  EXPECT_FALSE(fs::exists(run_->root() / "attempts/03"));
  EXPECT_FALSE(fs::exists(run_->root() / "stagnant"));
}

// What a stagnant try left (an LLM Coder's transcripts) is kept outside attempts/, per plan.
TEST_F(WorkflowTest, StagnantTriesKeepWhatTheCoderLeftUnderStagnant) {
  coder_.stagnate_after["integration"] = 0;
  coder_.stagnant_note = "the reply held no code";
  planner_.max_versions = 2;
  auto state = workflow().start("task");
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::failed);
  EXPECT_TRUE(state->attempts.empty());
  EXPECT_FALSE(fs::exists(run_->root() / "attempts/01"));
  for (const char* kept : {"stagnant/v1-01/why.txt", "stagnant/v2-01/why.txt"}) {
    auto note = read_file(run_->root() / kept);
    ASSERT_TRUE(note.ok()) << kept;
    EXPECT_EQ(*note, "the reply held no code");
  }
  EXPECT_TRUE(fs::exists(run_->root() / "stagnant/v1-01/attempt.json"));
}

TEST_F(WorkflowTest, BudgetsEndTheRun) {
  for (int i = 1; i <= 9; ++i)
    verifier_.script[fmt::format("integration try {}", i)] = {
        VerifyState::verified, Outcome::wrong, 0, 0, 0, "bad"};
  {
    WorkflowOptions options;
    options.budgets.max_attempts = 2;
    auto state = workflow(options).start("task");
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(state->end, RunEnd::budget_exhausted);
    EXPECT_EQ(state->used.attempts, 2);
    EXPECT_NE(state->end_reason.find("attempt budget"), std::string::npos);
  }
  {
    WorkflowOptions options;
    options.budgets.max_tokens = 250;  // 100 per draft
    auto run = run::RunDir::create(root_, "task2");
    ASSERT_TRUE(run.ok());
    Workflow engine(*run, {planner_, coder_, verifier_, nullptr, nullptr}, options);
    auto state = engine.start("task2");
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(state->end, RunEnd::budget_exhausted);
    EXPECT_EQ(state->used.tokens, 300);
  }
  {
    WorkflowOptions options;
    options.budgets.max_wall_s = 10;
    options.clock = [this] { return clock_s_ += 4; };  // every reading 4 s later
    auto run = run::RunDir::create(root_, "task3");
    ASSERT_TRUE(run.ok());
    Workflow engine(*run, {planner_, coder_, verifier_, nullptr, nullptr}, options);
    auto state = engine.start("task3");
    ASSERT_TRUE(state.ok());
    EXPECT_EQ(state->end, RunEnd::budget_exhausted);
    EXPECT_NE(state->end_reason.find("time budget"), std::string::npos);
  }
}

// The machine failing a verification (a full disk in the build: build_failure.h) spends no attempt
// and abandons no plan; the run stops, and --resume goes on with the same scope.
TEST_F(WorkflowTest, AMachineFailureSpendsNoAttemptAndResumeGoesOn) {
  verifier_.script["integration try 1"] = testing::ends(
      VerifyState::infrastructure_error, "build: the machine failed the build: No space left");
  auto run = run::RunDir::create(root_, "full_disk");
  ASSERT_TRUE(run.ok());
  auto stopped = Workflow(*run, {planner_, coder_, verifier_, nullptr, nullptr}, {}).start("t");
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->end, RunEnd::infrastructure_error);
  EXPECT_EQ(stopped->used.attempts, 0);
  EXPECT_EQ(stopped->replans, 0);
  EXPECT_EQ(stopped->plans.size(), 1u);
  EXPECT_EQ(stopped->failures_in_row, 0);

  verifier_.script.erase("integration try 1");  // the disk freed: the same program now passes
  const size_t requests_before = coder_.requests.size();
  std::vector<std::string> events;
  WorkflowOptions options;
  options.on_event = [&](const WorkflowEvent& event) { events.push_back(event.name); };
  auto resumed = Workflow(*run, {planner_, coder_, verifier_, nullptr, nullptr}, options).resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->end, RunEnd::succeeded) << resumed->end_reason;
  EXPECT_EQ(resumed->plans.size(), 1u);
  EXPECT_EQ(resumed->replans, 0);
  EXPECT_EQ(resumed->used.attempts, 1);
  EXPECT_NE(std::find(events.begin(), events.end(), "run.reopen"), events.end());
  // The same program again: the failed attempt's variant counts as untried, its feedback unused.
  ASSERT_GT(coder_.requests.size(), requests_before);
  EXPECT_TRUE(coder_.requests[requests_before].tried_variants.empty());
  EXPECT_FALSE(coder_.requests[requests_before].feedback.has_value());
}

TEST_F(WorkflowTest, MachineryFailureStopsNoGpuStopsRefusalStops) {
  verifier_.script["integration try 1"] =
      testing::ends(VerifyState::infrastructure_error, "judge did not start");
  auto state = workflow().start("task");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->end, RunEnd::infrastructure_error);
  EXPECT_NE(state->end_reason.find("judge did not start"), std::string::npos);

  verifier_.script["integration try 1"] = testing::ends(VerifyState::no_gpu);
  auto run2 = run::RunDir::create(root_, "nogpu");
  ASSERT_TRUE(run2.ok());
  auto no_gpu = Workflow(*run2, {planner_, coder_, verifier_, nullptr, nullptr}, {}).start("nogpu");
  ASSERT_TRUE(no_gpu.ok());
  EXPECT_EQ(no_gpu->end, RunEnd::no_gpu);

  planner_.refuse = true;
  auto run3 = run::RunDir::create(root_, "refused");
  ASSERT_TRUE(run3.ok());
  auto refused =
      Workflow(*run3, {planner_, coder_, verifier_, nullptr, nullptr}, {}).start("refused");
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->end, RunEnd::refused);
  EXPECT_NE(refused->end_reason.find("aten.convolution"), std::string::npos);
  EXPECT_TRUE(refused->attempts.empty());
}

TEST_F(WorkflowTest, ARunBuiltWithoutAGpuIsVerifiedWhenResumedOnOne) {
  verifier_.script["integration try 1"] = testing::ends(VerifyState::no_gpu);
  auto first = workflow().start("task");
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->end, RunEnd::no_gpu);
  // Resumed without a GPU: nothing to do. With one: the integration runs again, with the
  // Coder's first variant (the no_gpu attempt was never judged).
  auto idle = workflow().resume();
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->end, RunEnd::no_gpu);
  EXPECT_EQ(idle->attempts.size(), 1u);
  verifier_.script.clear();
  refiner_.list = {};
  WorkflowOptions options;
  options.reopen_no_gpu = true;
  auto resumed = workflow(options).resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->end, RunEnd::succeeded);
  ASSERT_EQ(resumed->attempts.size(), 2u);
  EXPECT_EQ(resumed->attempts[1].label, "integration try 1");
  EXPECT_EQ(resumed->best_attempt, 2);
}

TEST_F(WorkflowTest, ResumingARefineWithNothingQueuedFinishesWithTheBest) {
  refiner_.list = {{"block 512", {{"refine", 512}}}};
  WorkflowOptions options;
  options.checkpoint = [](std::string_view point, int attempt) {
    if (point == "after_result" && attempt == 2) throw std::runtime_error("crash");
  };
  EXPECT_THROW((void)workflow(options).start("task"), std::runtime_error);
  // The state as saved before attempt 2 routed, then its queue emptied by hand.
  auto saved = load_run_state(run_->root());
  ASSERT_TRUE(saved.ok());
  saved->attempts.pop_back();
  saved->refine.queue.clear();
  ASSERT_TRUE(save_run_state(run_->root(), *saved).ok());
  fs::remove_all(run_->root() / "attempts/02");
  auto resumed = workflow().resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->end, RunEnd::succeeded);
  EXPECT_EQ(resumed->best_attempt, 1);
}

TEST(RoutingTest, FasterBeyondSpread) {
  EXPECT_TRUE(faster_beyond_spread({1.0, 0.99, 1.01}, {0.9, 0.89, 0.91}, 0.01));
  EXPECT_FALSE(faster_beyond_spread({1.0, 0.99, 1.01}, {0.995, 0.99, 1.0}, 0.01));  // < 1 %
  EXPECT_FALSE(faster_beyond_spread({1.0, 0.8, 1.2}, {0.92, 0.91, 0.93}, 0.01));    // within spread
  EXPECT_FALSE(faster_beyond_spread({1.0, 0.99, 1.01}, {1.1, 1.0, 1.2}, 0.01));
  EXPECT_FALSE(faster_beyond_spread({0, 0, 0}, {0.5, 0.5, 0.5}, 0.01));
}

TEST(RoutingTest, SubtaskCheckWithoutAGpuPassesIntegrationWithoutAGpuEnds) {
  RunState state;
  state.plans.push_back({1, "plans/plan.v1.json", "first plan", json::object(), {"a", "b"}});
  state.subtasks = {{"a"}, {"b"}};
  state.phase = Phase::coding;
  AttemptRecord attempt;
  attempt.number = 1;
  attempt.dir = "attempts/01";
  attempt.kind = AttemptKind::subtask;
  attempt.subtask = 0;
  attempt.status = AttemptStatus::finished;
  attempt.result = AttemptResult{};
  attempt.result->state = VerifyState::no_gpu;
  state.attempts.push_back(attempt);
  route_after_attempt(state, 1, {});
  EXPECT_EQ(state.current_subtask, 1);
  EXPECT_EQ(state.phase, Phase::coding);
  attempt.number = 2;
  attempt.kind = AttemptKind::integration;
  attempt.subtask = -1;
  state.attempts.push_back(attempt);
  route_after_attempt(state, 2, {});
  EXPECT_EQ(state.end, RunEnd::no_gpu);
}

TEST(RunStateTest, JsonRoundTripAndClearErrors) {
  RunState state;
  state.task = "t";
  state.phase = Phase::refining;
  state.plans.push_back({1, "plans/plan.v1.json", "first plan", {{"strict", true}}, {"a"}});
  state.subtasks = {{"a", SubtaskStatus::passed, 2}};
  AttemptRecord attempt;
  attempt.number = 3;
  attempt.dir = "attempts/03";
  attempt.kind = AttemptKind::refine;
  attempt.status = AttemptStatus::finished;
  attempt.result = AttemptResult{VerifyState::verified, Outcome::passed, "",  Timing{1, 0.9, 1.1},
                                 {{"eager", 2.5}},      "keep_going",    "ok"};
  attempt.accepted = true;
  state.attempts.push_back(attempt);
  state.best_attempt = 3;
  state.refine.started = true;
  state.refine.queue = {{"x", {{"block", 128}}}};
  state.refine.before_ms = 1.5;
  state.used = {4, 12.5, 300};
  auto back = run_state_from_json(run_state_to_json(state));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(run_state_to_json(*back), run_state_to_json(state));
  EXPECT_EQ(back->best()->result->baseline_ms("eager"), 2.5);

  json bad = run_state_to_json(state);
  bad["phase"] = "dreaming";
  auto error = run_state_from_json(bad);
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.error().message.find("dreaming"), std::string::npos);
  EXPECT_FALSE(run_state_from_json(json{{"format", "other"}}).ok());
}

TEST(RunStateTest, ResultFromVerifyJsonUsesTheSpeedupBasis) {
  json verify = {
      {"format", "stitchcuda.verify"},
      {"version", 1},
      {"state", "verified"},
      {"outcome", "passed"},
      {"reason", ""},
      {"timing",
       {{"protocol", {{"median_ms", 1.0}, {"p10_ms", 0.9}, {"p90_ms", 1.1}}},
        {"synced", {{"median_ms", 1.2}, {"p10_ms", 1.1}, {"p90_ms", 1.3}}},
        {"speedup_basis", "synced"}}},
      {"baselines", {{"modes", {{"eager", {{"median_ms", 2.4}}}, {"compile", {{"error", "x"}}}}}}}};
  auto report = verify_report_from_json(verify);
  ASSERT_TRUE(report.ok()) << report.error().message;
  Feedback feedback;
  feedback.suggestion = {SuggestionRule::keep_going, "good"};
  AttemptResult result = attempt_result_from_verify(*report, feedback);
  EXPECT_TRUE(result.passed());
  EXPECT_EQ(result.timing->median_ms, 1.2);
  EXPECT_EQ(result.baseline_ms("eager"), 2.4);
  EXPECT_FALSE(result.baseline_ms("compile").has_value());
  EXPECT_EQ(result.suggestion_rule, "keep_going");
  EXPECT_FALSE(verify_report_from_json(json{{"format", "x"}}).ok());
}

// The states routing compares are enums read from their names; an unknown name is refused.
TEST(RunStateTest, AttemptResultStateRoundTripsByName) {
  for (VerifyState state :
       {VerifyState::verified, VerifyState::no_gpu, VerifyState::infrastructure_error}) {
    AttemptResult result;
    result.state = state;
    json doc = attempt_result_to_json(result);
    EXPECT_EQ(doc["state"], std::string(enum_name(state)));
    auto back = attempt_result_from_json(doc);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->state, state);
  }
  json bad = attempt_result_to_json(AttemptResult{});
  bad["state"] = "half_verified";
  auto refused = attempt_result_from_json(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("half_verified"), std::string::npos);
}

}  // namespace
}  // namespace stitch::agents
