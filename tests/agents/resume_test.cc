// Resume after SIGKILL: the orchestrator (a forked child running the engine with fake roles) is
// killed at each point of an attempt; resuming in this process must finish the run with the same
// finished attempts as an uninterrupted run, verify no attempt twice, and lose none.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "agents/workflow.h"
#include "fake_roles.h"

namespace stitch::agents {
namespace {

using nlohmann::json;
using testing::FakeAnswer;
using testing::FakeCoder;
using testing::FakePlanner;
using testing::FakeRefiner;
using testing::FakeVerifier;

// One set of fakes, scripted the same way in the child and in the parent.
struct Roles {
  FakePlanner planner;
  FakeCoder coder;
  FakeVerifier verifier;
  FakeRefiner refiner;

  explicit Roles(const fs::path& log) {
    coder.mode = CoderGranularity::per_subtask;
    verifier.log = log;
    verifier.script["subtask:0 try 1"] = testing::fails(Outcome::compile_error, "nvcc");
    verifier.script["integration try 1"] = testing::fails(Outcome::wrong, "mismatch");
    verifier.script["refine:512"] = testing::passes_in(0.7, 0.69, 0.71);
    verifier.script["refine:128"] = testing::passes_in(1.2, 1.19, 1.21);
    refiner.list = {{"block 512", {{"refine", 512}}}, {"block 128", {{"refine", 128}}}};
  }
  WorkflowDeps deps() { return {planner, coder, verifier, nullptr, &refiner}; }
};

// What an uninterrupted run and a resumed one must agree on: the finished attempts in order.
std::vector<std::string> finished_attempts(const RunState& state) {
  std::vector<std::string> out;
  for (const auto& attempt : state.attempts)
    if (attempt.status == AttemptStatus::finished)
      out.push_back(
          fmt::format("{} {} {}", attempt.label,
                      attempt.result->outcome ? enum_name(*attempt.result->outcome) : "-",
                      attempt.accepted ? "accepted" : ""));
  return out;
}

std::map<std::string, int> verify_calls(const fs::path& log) {
  std::map<std::string, int> calls;
  auto text = read_file(log);
  if (!text.ok()) return calls;
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    if (end > start) calls[text->substr(start, end - start)]++;
    start = end + 1;
  }
  return calls;
}

class ResumeTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("resume_test_{}", ::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_P(ResumeTest, SigkillAtEveryPointOfAnAttemptThenResume) {
  const auto& [point, victim] = GetParam();

  // The uninterrupted run, for comparison.
  Roles reference_roles(root_ / "reference.log");
  auto reference_dir = run::RunDir::create(root_, "reference");
  ASSERT_TRUE(reference_dir.ok());
  auto reference = Workflow(*reference_dir, reference_roles.deps(), {}).start("task");
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  ASSERT_EQ(reference->end, RunEnd::succeeded);
  ASSERT_GE(static_cast<int>(reference->attempts.size()), victim);

  fs::path run_root;
  {
    // Released before the fork: the child takes the run directory's lock (run_lock.h).
    auto run = run::RunDir::create(root_, "killed");
    ASSERT_TRUE(run.ok());
    run_root = run->root();
  }
  const fs::path log = root_ / "killed.log";
  const fs::path marker = root_ / "child_reached_point";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Roles roles(log);
    auto child_run = run::RunDir::open(run_root);
    if (!child_run.ok()) ::_exit(3);
    WorkflowOptions options;
    options.checkpoint = [&](std::string_view reached, int attempt) {
      if (reached != point || attempt != victim) return;
      (void)write_file_atomic(marker, "here");
      for (;;)
        ::pause();  // killed here by the parent
    };
    (void)Workflow(*child_run, roles.deps(), options).start("task");
    ::_exit(2);  // the point was never reached
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int status = 0;
  bool exited = false;
  while (!fs::exists(marker) && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(child, &status, WNOHANG) == child) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_FALSE(exited) << "the child finished without reaching " << point << " of attempt "
                       << victim;
  ASSERT_TRUE(fs::exists(marker)) << "the child never reached " << point;
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  auto before = verify_calls(log);

  // Resume in this process with fresh fakes.
  Roles roles(log);
  auto reopened = run::RunDir::open(run_root);
  ASSERT_TRUE(reopened.ok());
  std::vector<std::string> events;
  WorkflowOptions options;
  options.on_event = [&](const WorkflowEvent& event) { events.push_back(event.name); };
  auto resumed = Workflow(*reopened, roles.deps(), options).resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->end, RunEnd::succeeded);
  EXPECT_EQ(finished_attempts(*resumed), finished_attempts(*reference));
  EXPECT_EQ(resumed->best()->label, reference->best()->label);

  // No attempt verified twice; every finished attempt was verified exactly once.
  auto after = verify_calls(log);
  for (const auto& [dir, count] : after)
    EXPECT_EQ(count, 1) << "attempt " << dir << " verified twice";
  int interrupted = 0;
  for (const auto& attempt : resumed->attempts) {
    const std::string name = fs::path(attempt.dir).filename().string();
    if (attempt.status == AttemptStatus::interrupted) {
      ++interrupted;
      EXPECT_EQ(attempt.number, victim);
      continue;
    }
    EXPECT_EQ(attempt.status, AttemptStatus::finished);
    EXPECT_EQ(after[name], 1) << name;
  }
  // Killed before result.json: the attempt is redone (interrupted); after it: recovered as is.
  const bool before_result = point != "after_result";
  EXPECT_EQ(interrupted, before_result ? 1 : 0);
  if (!before_result) {
    EXPECT_NE(std::find(events.begin(), events.end(), "attempt.recovered"), events.end());
    EXPECT_EQ(before.count(fmt::format("{:02}", victim)), 1u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Points, ResumeTest,
    ::testing::Combine(::testing::Values("after_attempt_json", "after_code", "after_verify",
                                         "after_result"),
                       // 1: a failing subtask check, 4: integration, 6: a refine candidate.
                       ::testing::Values(1, 4, 6)),
    [](const auto& info) {
      return fmt::format("{}_attempt{}", std::get<0>(info.param), std::get<1>(info.param));
    });

}  // namespace
}  // namespace stitch::agents
