// The limits of processes that run task code (util/task_limits.h, issue 15 item 7): the timeout and
// memory options reach every harness command line; and, with the real harness and a task that
// ignores SIGTERM and starts a subprocess, an orchestrator killed with SIGKILL mid-capture leaves
// nothing of the task's process group behind (label torch: the harness imports torch).
#include "util/task_limits.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "../util/process_test_support.h"
#include "util/python_module.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

struct ResetLimits {
  ~ResetLimits() { set_task_limits({}); }
};

TEST(TaskLimits, TimeoutCapsEachUsesOwn) {
  ResetLimits reset;
  EXPECT_EQ(task_timeout_s(600), 600);
  EXPECT_EQ(task_timeout_s(0), 0);
  set_task_limits({30, std::nullopt});
  EXPECT_EQ(task_timeout_s(600), 30);
  EXPECT_EQ(task_timeout_s(10), 10);
  EXPECT_EQ(task_timeout_s(0), 30) << "no limit of its own: the task limit";
}

TEST(TaskLimits, MemoryDefaultsToThreeQuartersOfTheMachine) {
  ResetLimits reset;
  const uint64_t fallback = default_task_memory_bytes();
  EXPECT_GE(fallback, uint64_t{8} << 30);
  EXPECT_EQ(task_memory_bytes(), fallback);
  set_task_limits({0, uint64_t{0}});
  EXPECT_EQ(task_memory_bytes(), 0u) << "0: no limit";
  set_task_limits({0, uint64_t{5} << 30});
  EXPECT_EQ(task_memory_bytes(), uint64_t{5} << 30);
}

TEST(TaskLimits, EveryHarnessCommandCarriesThem) {
  ResetLimits reset;
  set_task_limits({45, uint64_t{6} << 30});
  ProcessSpec spec = python_module_spec({"python3", "/x/python"}, "stitch_harness.judge", {"a"});
  EXPECT_EQ(spec.timeout_s, 45);
  EXPECT_EQ(spec.env["STITCH_TASK_MEMORY_BYTES"], std::to_string(uint64_t{6} << 30));
  EXPECT_EQ(spec.env["STITCH_TASK_GROUP_GUARD"], "1");
}

TEST(TaskProcess, GroupDiesWithAKilledOrchestrator) {
  const std::string python = STITCH_PYTHON_PATH;
  if (!fs::exists(python)) GTEST_SKIP() << "no Python at " << python;
  const fs::path dir = test_support::make_temp_dir("task-process");
  const fs::path pids = dir / "pids";
  const uint64_t memory = uint64_t{24} << 30;
  pid_t orchestrator = fork();
  if (orchestrator == 0) {
    set_task_limits({0, memory});
    ProcessSpec spec = python_module_spec(
        {python, fs::path(STITCH_SOURCE_DIR) / "python"}, "stitch_harness",
        {"capture", std::string(STITCH_TEST_DATA_DIR) + "/tasks/sleeping_task.py", "--out",
         (dir / "capture").string()});
    spec.env["STITCH_TEST_PID_FILE"] = pids.string();
    SystemProcessRunner runner;
    (void)runner.run(spec);
    _exit(0);
  }
  ASSERT_GT(orchestrator, 0);
  pid_t group = -1, sleeper = -1;
  uint64_t data_limit = 0;
  for (int i = 0; i < 1200 && group <= 0; ++i) {  // importing torch takes a while
    std::ifstream in(pids);
    if (!(in >> group >> sleeper >> data_limit)) group = -1;
    if (group <= 0) usleep(100 * 1000);
  }
  if (group <= 0) kill(orchestrator, SIGKILL);
  ASSERT_GT(group, 0) << "the task never started";
  EXPECT_EQ(data_limit, memory) << "RLIMIT_DATA of the task's process";
  ASSERT_EQ(kill(orchestrator, SIGKILL), 0);
  const auto killed = std::chrono::steady_clock::now();
  waitpid(orchestrator, nullptr, 0);
  EXPECT_TRUE(test_support::process_gone(sleeper)) << "the task's subprocess outlived it";
  EXPECT_TRUE(test_support::group_gone(group)) << "the task's process group outlived it";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count(), 2.0);
  kill(-group, SIGKILL);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch
