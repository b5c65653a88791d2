// SystemProcessRunner: output capture, exit status, timeouts and the kill of the whole group.
#include "util/process.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

namespace stitch {
namespace {

ProcessSpec shell(const std::string& script) {
  ProcessSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  return spec;
}

TEST(Process, CapturesOutputAndExitCode) {
  SystemProcessRunner runner;
  auto result = runner.run(shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stdout_text, "out\n");
  EXPECT_EQ(result->stderr_text, "err\n");
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_FALSE(result->succeeded());
  EXPECT_EQ(result->describe(), "exit code 3");
}

TEST(Process, ReportsSignal) {
  SystemProcessRunner runner;
  auto result = runner.run(shell("kill -SEGV $$"));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->term_signal, SIGSEGV);
  EXPECT_EQ(result->describe(), "killed by SIGSEGV");
}

TEST(Process, EnvironmentAndStdin) {
  SystemProcessRunner runner;
  ProcessSpec spec = shell("echo \"$STITCH_TEST_VAR\"; cat");
  spec.env["STITCH_TEST_VAR"] = "hello";
  spec.stdin_text = "from stdin";
  auto result = runner.run(spec);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stdout_text, "hello\nfrom stdin");
}

TEST(Process, StreamsStdoutLines) {
  SystemProcessRunner runner;
  ProcessSpec spec = shell("printf 'a\\nb\\nc'");
  std::vector<std::string> lines;
  spec.on_stdout_line = [&](std::string_view line) { lines.emplace_back(line); };
  auto result = runner.run(spec);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b", "c"}));
}

bool process_alive(pid_t pid) { return kill(pid, 0) == 0; }

TEST(Process, TimeoutKillsWholeProcessGroup) {
  SystemProcessRunner runner;
  auto pid_file = std::filesystem::temp_directory_path() / "stitch_process_test_pid";
  std::filesystem::remove(pid_file);
  // The grandchild ignores SIGTERM, so only the SIGKILL of the group ends it.
  ProcessSpec spec = shell("(trap '' TERM; sleep 60) & echo $! > " + pid_file.string() + "; wait");
  spec.timeout_s = 0.5;
  spec.kill_grace_s = 0.3;
  auto start = std::chrono::steady_clock::now();
  auto result = runner.run(spec);
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->timed_out);
  EXPECT_LT(elapsed, 10.0);
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 100 && process_alive(grandchild); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(process_alive(grandchild)) << "orphan left behind: " << grandchild;
}

TEST(Process, MissingCommandIsAnError) {
  SystemProcessRunner runner;
  ProcessSpec spec;
  spec.argv = {"definitely-not-a-command-stitch"};
  auto result = runner.run(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("command not found"), std::string::npos);
}

TEST(Process, ResourceLimitApplies) {
  SystemProcessRunner runner;
  ProcessSpec spec = shell("ulimit -n");
  spec.limits.open_files = 64;
  auto result = runner.run(spec);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stdout_text, "64\n");
}

}  // namespace
}  // namespace stitch
