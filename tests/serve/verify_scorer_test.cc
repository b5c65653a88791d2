// The real scorer's parts over fakes: which tasks a client may name, one capture per task, the
// reward of a verification, and the child launcher on a stand-in `stitchcuda`.
#include <algorithm>

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "serve/verify_scorer.h"
#include "serve_fixtures.h"
#include "util/fs.h"

namespace stitch::serve {
namespace {
namespace fs = std::filesystem;

void touch(const fs::path& path) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "# task\n";
}

TEST(ServeTaskRegistry, ResolvesNamesAndFolderTasksAndNothingElse) {
  test::TempDir dir;
  touch(dir.path() / "tasks" / "19_ReLU.py");
  touch(dir.path() / "outside.py");
  TaskRegistry registry;
  registry.named["relu"] = dir.path() / "outside.py";
  registry.folders.push_back(dir.path() / "tasks");
  EXPECT_EQ(*registry.resolve("relu"), dir.path() / "outside.py");
  EXPECT_EQ(*registry.resolve("19_ReLU"), fs::weakly_canonical(dir.path() / "tasks/19_ReLU.py"));
  EXPECT_TRUE(registry.resolve((dir.path() / "tasks/19_ReLU.py").string()).ok());
  for (const std::string& refused :
       {std::string("nope"), std::string("../outside"), (dir.path() / "outside.py").string(),
        std::string("/etc/passwd")}) {
    auto resolved = registry.resolve(refused);
    ASSERT_FALSE(resolved.ok()) << refused;
    EXPECT_EQ(resolved.error().kind, ErrorKind::bad_input);
  }
}

TEST(ServeTaskCache, CapturesEachTaskOnceUnderConcurrentRequests) {
  std::atomic<int> calls{0};
  TaskCache cache([&](const fs::path& task) -> Result<fs::path> {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return fs::path("/runs") / task.filename();
  });
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&cache, i] { (void)cache.run_dir(i % 2 ? "/t/a.py" : "/t/b.py"); });
  for (auto& thread : threads)
    thread.join();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(*cache.run_dir("/t/a.py"), fs::path("/runs/a.py"));
}

TEST(ServeTaskCache, AFailedCaptureIsTriedAgain) {
  int calls = 0;
  TaskCache cache([&](const fs::path&) -> Result<fs::path> {
    if (++calls == 1) return make_error("capture failed");
    return fs::path("/runs/x");
  });
  EXPECT_FALSE(cache.run_dir("/t/x.py").ok());
  EXPECT_TRUE(cache.run_dir("/t/x.py").ok());
}

class FakeLauncher final : public VerifyLauncher {
 public:
  Result<VerifyReport> verify(const VerifyJob& job, const CancelToken&, const Clock&) override {
    last = job;
    return report;
  }
  VerifyReport report;
  VerifyJob last;
};

TEST(ServeVerifyingScorer, TurnsTheVerificationIntoTheCombinedReward) {
  test::TempDir dir;
  touch(dir.path() / "tasks" / "t.py");
  TaskRegistry registry;
  registry.folders.push_back(dir.path() / "tasks");
  touch(dir.path() / "runs" / "t" / "graph.json");
  TaskCache cache([&](const fs::path&) -> Result<fs::path> { return dir.path() / "runs" / "t"; });
  FakeLauncher launcher;
  launcher.report.built = true;
  launcher.report.outcome = Outcome::passed;
  launcher.report.speedups = {{"eager", 3.0, 1.5, 2.0}};
  VerifyingScorer scorer(registry, cache, launcher, {dir.path() / "work", {}, 4});
  SteadyClock clock;
  CancelToken cancel;
  auto scored = scorer.score({"req/1", "t", "__global__ void k() {}", 0}, {3, cancel, clock});
  ASSERT_TRUE(scored.ok()) << scored.error().message;
  // src/reward's breakdown: the rule reward 1 + speedup 2.0, plus the built-in rubric's shaping.
  const auto& breakdown = scored->breakdown;
  EXPECT_EQ(breakdown.value("format", ""), "stitchcuda.reward") << breakdown.dump();
  EXPECT_DOUBLE_EQ(breakdown.value("rule_reward", 0.0), 3.0) << breakdown.dump();
  EXPECT_NEAR(scored->reward, std::clamp(3.0 + breakdown.value("shaping", 0.0), 0.0, 5.0), 1e-9);
  EXPECT_TRUE(scored->correct && scored->compiled && !scored->hacked);
  EXPECT_EQ(breakdown["rubric"]["scores"].size(), 4u) << breakdown.dump();
  EXPECT_EQ(launcher.last.gpu, 3);
  EXPECT_EQ(launcher.last.run_dir, dir.path() / "runs" / "t-gpu3");
  EXPECT_EQ(*read_file(launcher.last.program), "__global__ void k() {}");

  // More workers than GPUs: they share the GPUs round-robin (each keeps its own run folder).
  VerifyingScorer shared(registry, cache, launcher, {dir.path() / "work", {}, 2});
  ASSERT_TRUE(shared.score({"req/s", "t", "x", 0}, {3, cancel, clock}).ok());
  EXPECT_EQ(launcher.last.gpu, 1);
  EXPECT_EQ(launcher.last.run_dir, dir.path() / "runs" / "t-gpu3");

  launcher.report.state = VerifyState::no_gpu;
  launcher.report.outcome.reset();
  auto no_gpu = scorer.score({"req/n", "t", "x", 0}, {0, cancel, clock});
  ASSERT_TRUE(no_gpu.ok());
  EXPECT_EQ(no_gpu->error, ErrorCode::no_gpu);
  EXPECT_EQ(no_gpu->reward, 0);

  launcher.report.state = VerifyState::infrastructure_error;
  launcher.report.outcome.reset();
  EXPECT_EQ(scorer.score({"req/2", "t", "x", 0}, {0, cancel, clock}).error().kind,
            ErrorKind::machine);
  EXPECT_EQ(scorer.score({"req/3", "elsewhere", "x", 0}, {0, cancel, clock}).error().kind,
            ErrorKind::bad_input);
}

TEST(ServeWorkerRunDir, EachWorkerGetsItsOwnCopyOfTheCapture) {
  test::TempDir dir;
  const fs::path run = dir.path() / "runs" / "t-1";
  for (const char* name : {"graph.json", "task.py", "weights.safetensors", "summary.json"})
    touch(run / name);
  auto zero = worker_run_dir(run, 0);
  auto one = worker_run_dir(run, 1);
  ASSERT_TRUE(zero.ok() && one.ok());
  EXPECT_EQ(*one, dir.path() / "runs" / "t-1-gpu1");
  EXPECT_TRUE(fs::exists(*zero / "weights.safetensors"));
  EXPECT_TRUE(fs::exists(*one / "graph.json"));
  EXPECT_FALSE(fs::exists(*one / "summary.json"));  // a bare capture: verify adopts it
  EXPECT_EQ(*worker_run_dir(run, 1), *one);
}

TEST(ServeRequestFolderName, KeepsSafeCharactersAndTellsIdsApart) {
  EXPECT_EQ(request_folder_name("../../etc").find('/'), std::string::npos);
  EXPECT_NE(request_folder_name("a/b"), request_folder_name("a_b"));
}

// A stand-in for `stitchcuda` that prints a stored verify.json (or sleeps) and exits 1.
fs::path stand_in(const fs::path& dir, const std::string& body) {
  const fs::path script = dir / "stitchcuda";
  std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
  fs::permissions(script, fs::perms::owner_all);
  return script;
}

TEST(ServeChildVerifyLauncher, ReadsTheReportThatVerifyPrints) {
  test::TempDir dir;
  VerifyReport report;
  report.built = true;
  report.outcome = Outcome::wrong;
  report.reason = "output 0 differs";
  std::ofstream(dir.path() / "report.json") << verify_report_to_json(report).dump();
  ChildVerifyLauncher launcher(stand_in(dir.path(), "echo \"$CUDA_VISIBLE_DEVICES $@\" >&2; cat " +
                                                        (dir.path() / "report.json").string() +
                                                        "; exit 1"));
  SteadyClock clock;
  CancelToken cancel;
  auto read = launcher.verify({"/runs/t", "/w/program.cu", dir.path(), 2}, cancel, clock);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->outcome, Outcome::wrong);
  EXPECT_EQ(*read_file(dir.path() / "verify.log"), "2 verify /runs/t /w/program.cu --json\n");
}

TEST(ServeChildVerifyLauncher, StopsTheChildWhenTheTokenSaysSo) {
  test::TempDir dir;
  ChildVerifyLauncher launcher(stand_in(dir.path(), "sleep 30"));
  SteadyClock clock;
  CancelToken cancel;
  cancel.deadline_s = clock.now_s() + 0.2;
  const double started = clock.now_s();
  EXPECT_FALSE(launcher.verify({"/r", "/p.cu", dir.path(), 0}, cancel, clock).ok());
  EXPECT_LT(clock.now_s() - started, 5);
}

}  // namespace
}  // namespace stitch::serve
