// The loop with the built-in Planner and Coder and the real Verifier (VerifierRole) over the
// Verifier's fakes (compiler, audit, runner, judge, baselines): a program is planned, emitted,
// "built", judged and timed; refine keeps only the candidate the fake runner times faster; and
// the orchestrator killed with SIGKILL in the middle of a refine verification resumes to the
// same result, verifying no finished attempt again.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "../verify/verifier_fakes.h"
#include "agents/attempt_files.h"
#include "agents/builtin_roles.h"
#include "agents/refine.h"
#include "agents/system_roles.h"
#include "agents/workflow.h"
#include "util/fs.h"

namespace stitch::agents {
namespace {

using namespace stitch::verify_fakes;
using nlohmann::json;

const fs::path kSource = STITCH_SOURCE_DIR;

// The fake runner's report with every timed iteration at `ms`.
std::string runner_json_at(double ms) {
  std::string text = runner_json();
  const std::string times = fmt::format("[{0}, {0}, {0}, {0}, {0}]", ms);
  for (const char* original : {"[0.40, 0.50, 0.45, 0.42, 0.48]", "[0.5, 0.5, 0.5, 0.5, 0.5]"}) {
    const size_t at = text.find(original);
    if (at != std::string::npos) text.replace(at, std::string(original).size(), times);
  }
  return text;
}

// Everything one orchestrator process needs; built the same way in a killed child and in the
// resuming parent.
struct Loop {
  VerifierFakes fakes;
  BuiltinPlanner planner;
  BuiltinCoder coder{{kSource / "include", kSource}};
  BuiltinRefinePolicy refiner;
  std::unique_ptr<VerifierRole> verifier;

  Loop() {
    fakes.baselines.cached = true;
    fakes.judge.comparison = passing_comparison();
    fakes.runner.runner_json = runner_json_at(0.45);
    SystemVerifierConfig config;
    config.gpu = GpuInfo{0, "NVIDIA H200", 9, 0, 132, 60 << 20, int64_t{141} << 30};
    verifier = std::make_unique<VerifierRole>(fakes.deps(), config);
  }

  // Before each verification: the candidate with a 512-thread block runs faster.
  void time_by_variant(const fs::path& attempt_dir) {
    auto draft = read_draft(attempt_dir);
    const bool wide =
        draft.ok() && draft->variant.dump().find("\"block\":512") != std::string::npos;
    fakes.runner.runner_json = runner_json_at(wide ? 0.30 : 0.45);
  }

  WorkflowOptions options(run::RunDir& run, std::function<void(std::string_view, int)> also = {}) {
    WorkflowOptions options;
    options.checkpoint = [this, &run, also](std::string_view point, int attempt) {
      if (point == "after_code")
        time_by_variant(run.root() / fmt::format("attempts/{:02}", attempt));
      if (also) also(point, attempt);
    };
    return options;
  }
};

fs::path make_run(const fs::path& root, const std::string& name) {
  auto run = run::RunDir::create(root, name);
  EXPECT_TRUE(run.ok());
  fs::copy_file(kSource / "tests/plan/data/plan_broadcast_chain.graph.json",
                run->root() / "graph.json");
  return run->root();
}

std::vector<std::string> finished(const RunState& state) {
  std::vector<std::string> out;
  for (const auto& attempt : state.attempts)
    if (attempt.status == AttemptStatus::finished)
      out.push_back(fmt::format(
          "{} {} {:.2f} {}", attempt.label, enum_name(attempt.result->outcome.value()),
          attempt.result->timing ? attempt.result->timing->median_ms : 0.0, attempt.accepted));
  return out;
}

class LoopVerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("loop_verifier_test_{}", ::getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(LoopVerifierTest, PlansEmitsVerifiesAndRefinesThroughTheRealVerifier) {
  Loop loop;
  auto run = run::RunDir::open(make_run(root_, "chain"));
  ASSERT_TRUE(run.ok());
  Workflow workflow(*run, {loop.planner, loop.coder, *loop.verifier, nullptr, &loop.refiner},
                    loop.options(*run));
  auto state = workflow.start("chain");
  ASSERT_TRUE(state.ok()) << state.error().message;
  EXPECT_EQ(state->end, RunEnd::succeeded) << state->end_reason;
  ASSERT_GE(state->attempts.size(), 3u);
  EXPECT_EQ(state->attempts[0].kind, AttemptKind::integration);
  EXPECT_EQ(state->refine.before_ms, 0.45);
  // Exactly the 512-thread candidate was accepted, and it is the best.
  int accepted = 0;
  for (const auto& attempt : state->attempts)
    if (attempt.accepted) {
      ++accepted;
      EXPECT_NE(attempt.label.find("block=512"), std::string::npos) << attempt.label;
    }
  EXPECT_EQ(accepted, 1);
  const AttemptRecord* best = state->best();
  ASSERT_NE(best, nullptr);
  EXPECT_DOUBLE_EQ(best->result->timing->median_ms, 0.30);
  EXPECT_EQ(best->result->baseline_ms("eager"), 2.0);
  // The real Verifier wrote its files, and the program it was given is the emitted one.
  const fs::path attempt = run->root() / best->dir;
  for (const char* file : {"verify.json", "feedback.json", "result.json", "src/program.cu"})
    EXPECT_TRUE(fs::exists(attempt / file)) << file;
  auto source = read_file(attempt / "src/program.cu");
  ASSERT_TRUE(source.ok());
  EXPECT_NE(source->find("stream, 512)"), std::string::npos);
  EXPECT_GE(loop.fakes.judge.stops, loop.fakes.judge.starts);  // the judge is stopped on every path
  EXPECT_FALSE(loop.fakes.judge.running);
}

TEST_F(LoopVerifierTest, SigkillDuringARefineVerificationThenResume) {
  // The uninterrupted run.
  Loop reference_loop;
  auto reference_run = run::RunDir::open(make_run(root_, "reference"));
  ASSERT_TRUE(reference_run.ok());
  auto reference = Workflow(*reference_run,
                            {reference_loop.planner, reference_loop.coder, *reference_loop.verifier,
                             nullptr, &reference_loop.refiner},
                            reference_loop.options(*reference_run))
                       .start("chain");
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  ASSERT_GE(reference->attempts.size(), 3u);

  const fs::path run_root = make_run(root_, "killed");
  const fs::path marker = root_ / "reached";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Loop loop;
    auto run = run::RunDir::open(run_root);
    if (!run.ok()) ::_exit(3);
    // Killed inside the Verifier of attempt 2 (a refine candidate), mid-build.
    loop.fakes.compiler.script.during_build = [&](const BuildRequest&) {
      if (fs::exists(run_root / "attempts/02/draft.json") &&
          !fs::exists(run_root / "attempts/03")) {
        (void)write_file_atomic(marker, "here");
        for (;;)
          ::pause();
      }
    };
    (void)Workflow(*run, {loop.planner, loop.coder, *loop.verifier, nullptr, &loop.refiner},
                   loop.options(*run))
        .start("chain");
    ::_exit(2);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(marker) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_TRUE(fs::exists(marker)) << "the child never reached the refine build";
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  auto before = read_file(run_root / "attempts/01/result.json");
  ASSERT_TRUE(before.ok());

  Loop loop;
  auto run = run::RunDir::open(run_root);
  ASSERT_TRUE(run.ok());
  auto resumed = Workflow(*run, {loop.planner, loop.coder, *loop.verifier, nullptr, &loop.refiner},
                          loop.options(*run))
                     .resume();
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->end, RunEnd::succeeded);
  EXPECT_EQ(finished(*resumed), finished(*reference));
  EXPECT_EQ(resumed->attempt(2)->status, AttemptStatus::interrupted);
  // Attempt 1 finished before the kill: kept as it was, not verified again (the resumed process
  // built only the attempts after it).
  EXPECT_EQ(read_file(run_root / "attempts/01/result.json").value(), *before);
  for (const auto& request : loop.fakes.compiler.requests)
    EXPECT_EQ(request.sources.at(0).string().find("/attempts/01/"), std::string::npos);
}

}  // namespace
}  // namespace stitch::agents
