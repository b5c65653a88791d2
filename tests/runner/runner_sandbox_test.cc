// The runner's sandbox pieces (src/runner/sandbox.h): thread and child-process listing, the
// seccomp filter (fork/exec refused, threads allowed), and enter_sandbox's working directory,
// environment scrub and command-line wipe. Everything that changes the process runs in a forked
// child, which reports through its exit code.
#include "runner/sandbox.h"
#include "support/in_child.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

namespace stitch::runner {
namespace {

namespace fs = std::filesystem;

using test_support::in_child;

TEST(RunnerSandbox, ListsThreads) {
  std::vector<int> before = list_threads();
  EXPECT_FALSE(before.empty());
  EXPECT_TRUE(std::is_sorted(before.begin(), before.end()));
  EXPECT_NE(std::find(before.begin(), before.end(), static_cast<int>(gettid())), before.end());
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    while (!stop)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  std::vector<int> during = list_threads();
  std::vector<int> started = threads_started(during, before);
  EXPECT_EQ(started.size(), 1u);
  if (!started.empty()) {
    EXPECT_NE(describe_threads(started).find(std::to_string(started[0])), std::string::npos);
  }
  stop = true;
  worker.join();
}

TEST(RunnerSandbox, FindsAndKillsChildren) {
  pid_t child = fork();
  if (child == 0) {
    sleep(60);
    _exit(0);
  }
  std::vector<int> children = list_child_processes();
  EXPECT_NE(std::find(children.begin(), children.end(), child), children.end());
  kill_processes({child});
  EXPECT_EQ(kill(child, 0), -1);  // reaped: the pid is gone
}

TEST(RunnerSandbox, SeccompRefusesForkButNotThreads) {
  // Exit codes: 0 ok, 10 filter not installable here, 1..4 a failed expectation.
  int code = in_child([] {
    SeccompReport report = install_process_filter();
    if (!report.installed) return 10;
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    if (pid != -1 || errno != EPERM) return 1;
    std::atomic<int> ran{0};
    std::thread worker([&] { ran = 1; });
    worker.join();
    if (ran != 1) return 2;
    auto refusals = seccomp_refusals();
    if (refusals.empty() || refusals[0].count != 1) return 3;
    char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
    execv("/bin/true", argv);  // returns only when refused
    if (errno != EPERM) return 4;
    return 0;
  });
  if (code == 10) GTEST_SKIP() << "seccomp filters are not permitted in this environment";
  EXPECT_EQ(code, 0);
}

TEST(RunnerSandbox, EntersAnEmptyWorkDirWithAScrubbedEnvironment) {
  fs::path base = fs::temp_directory_path() / fmt::format("runner_sandbox_test_{}", getpid());
  fs::path work = base / "work";
  fs::create_directories(work);
  std::ofstream(work / "left_over.txt") << "judge data";
  // Exit codes: 0 ok, 1..6 a failed expectation.
  int code = in_child([&] {
    setenv("PYTHONPATH", "/judge/python", 1);
    setenv("TORCH_HOME", "/judge/torch", 1);
    setenv("RUN_DIR_HINT", (base / "run").c_str(), 1);
    setenv("KEPT_VARIABLE", "kept", 1);
    // A command line whose arguments must be wiped from memory.
    std::string arg0 = "stitch-runner", arg1 = "--slots=" + (base / "run").string();
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    SandboxOptions options;
    options.work_dir = work;
    options.isolate_network = false;  // not what this test is about, and may be unavailable
    options.private_paths = {(base / "run").string()};
    auto report = enter_sandbox(options, 2, argv);
    if (!report.ok()) return 1;
    if (fs::current_path() != fs::absolute(work)) return 2;
    if (fs::exists(work / "left_over.txt")) return 3;
    if (getenv("PYTHONPATH") || getenv("TORCH_HOME") || getenv("RUN_DIR_HINT")) return 4;
    if (!getenv("KEPT_VARIABLE") || std::string(getenv("HOME")) != fs::absolute(work).string())
      return 5;
    std::ifstream environ_file("/proc/self/environ");
    std::string environ_text((std::istreambuf_iterator<char>(environ_file)),
                             std::istreambuf_iterator<char>());
    if (environ_text.find("/judge/python") != std::string::npos) return 6;
    return 0;
  });
  EXPECT_EQ(code, 0);
  fs::remove_all(base);
}

// Inherited descriptors are closed, unless a profiler injected itself (ncu's channel to its
// front end: closing it crashed the runner under ncu); LD_PRELOAD likewise.
TEST(RunnerSandbox, InheritedDescriptorsClosedUnlessUnderAProfiler) {
  for (bool under_profiler : {false, true}) {
    fs::path work = fs::temp_directory_path() /
                    fmt::format("runner_sandbox_fd_test_{}_{}", getpid(), under_profiler);
    fs::create_directories(work);
    // Exit codes: 0 as expected, 1 setup failed, 2 descriptor state wrong, 3 LD_PRELOAD wrong.
    int code = in_child([&] {
      int fd = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC: an inherited-style descriptor
      setenv("LD_PRELOAD", "libprofiler_injection.so", 1);
      std::string arg0 = "stitch-runner";
      char* argv[] = {arg0.data(), nullptr};
      SandboxOptions options;
      options.work_dir = work;
      options.isolate_network = false;
      options.under_profiler = under_profiler;
      if (!enter_sandbox(options, 1, argv).ok()) return 1;
      const bool open_now = fcntl(fd, F_GETFD) != -1;
      if (open_now != under_profiler) return 2;
      if ((getenv("LD_PRELOAD") != nullptr) != under_profiler) return 3;
      return 0;
    });
    EXPECT_EQ(code, 0) << "under_profiler " << under_profiler;
    fs::remove_all(work);
  }
}

TEST(RunnerSandbox, CreatesAndRemovesATemporaryWorkDir) {
  int code = in_child([] {
    char arg0[] = "stitch-runner";
    char* argv[] = {arg0, nullptr};
    SandboxOptions options;
    options.isolate_network = false;
    auto report = enter_sandbox(options, 1, argv);
    if (!report.ok() || !report->created_work_dir) return 1;
    if (!fs::is_directory(report->work_dir)) return 2;
    leave_sandbox(*report);
    if (fs::exists(report->work_dir)) return 3;
    return 0;
  });
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace stitch::runner
