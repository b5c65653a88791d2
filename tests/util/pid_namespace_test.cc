// PID namespaces of spawned children (util/pid_namespace.h): a long-lived fake judge as PID 1 of a
// namespace of its own, a second process joining it (same namespace, not ours), exit codes and
// signals carried through the joining child, the joined process dying with the namespace, and both
// seeing the namespace's own /proc.
// Skips visibly where this process may not create PID namespaces (not root).
#include "util/pid_namespace.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <iterator>
#include <filesystem>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "util/child_process.h"
#include "util/fs.h"
#include "util/process.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

class PidNamespaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!can_create_pid_namespace()) GTEST_SKIP() << "no permission to create PID namespaces";
    dir_ = fs::temp_directory_path() / fmt::format("pid_namespace_test_{}", getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A fake judge: PID 1 of a new namespace, writes its own view of itself, then waits.
  ChildProcess start_judge() {
    ChildSpec spec;
    spec.argv = {"sh", "-c", "echo $$ > " + (dir_ / "judge.txt").string() + "; exec sleep 60"};
    spec.pid_namespace = PidNamespace::own();
    auto judge = ChildProcess::start(spec);
    EXPECT_TRUE(judge.ok()) << (judge.ok() ? "" : judge.error().message);
    for (int i = 0; i < 500 && !fs::exists(dir_ / "judge.txt"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return std::move(*judge);
  }

  ProcessResult run_joined(pid_t judge, const std::string& script) {
    ProcessSpec spec;
    spec.argv = {"sh", "-c", script};
    spec.pid_namespace = PidNamespace::join(judge);
    spec.timeout_s = 30;
    SystemProcessRunner runner;
    auto result = runner.run(spec);
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return result.ok() ? *result : ProcessResult{};
  }

  fs::path dir_;
};

TEST_F(PidNamespaceTest, AJoinedProcessSharesTheJudgesNamespaceAndNotOurs) {
  ChildProcess judge = start_judge();
  auto judge_view = read_file(dir_ / "judge.txt");
  ASSERT_TRUE(judge_view.ok());
  EXPECT_EQ(*judge_view, "1\n");  // PID 1 of its namespace
  std::string judge_namespace = pid_namespace_id(judge.pid());
  ASSERT_FALSE(judge_namespace.empty());
  EXPECT_NE(judge_namespace, pid_namespace_id());

  ProcessResult joined = run_joined(judge.pid(), "echo $$; readlink /proc/self/ns/pid");
  ASSERT_EQ(joined.exit_code, 0) << joined.stderr_text;
  std::vector<std::string> lines;
  std::istringstream text(joined.stdout_text);
  for (std::string line; std::getline(text, line);)
    lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u) << joined.stdout_text;
  EXPECT_NE(lines[0], "1");  // a process of the judge's namespace, not its init
  EXPECT_LT(std::stoi(lines[0]), 100) << "the pid is the namespace's view, not ours";
  EXPECT_EQ(lines[1], judge_namespace);

  ProcessResult stopped = judge.stop(0, 0.5);  // PID 1 ignores SIGTERM: SIGKILL ends it
  EXPECT_EQ(stopped.term_signal, SIGKILL);
}

// The CUDA driver reads /proc/<getpid()>: both the namespace's init and a joined process must see
// the namespace's own /proc (one NSpid level, /proc/self their own pid), not ours.
TEST_F(PidNamespaceTest, OwnAndJoinedProcessesSeeTheNamespacesProc) {
  ChildProcess judge = start_judge();
  ProcessResult joined = run_joined(
      judge.pid(),
      "echo $$; readlink /proc/self; grep NSpid /proc/self/status; ls /proc | grep -c '^[0-9]'");
  ASSERT_EQ(joined.exit_code, 0) << joined.stderr_text;
  std::istringstream text(joined.stdout_text);
  std::string shell_pid, proc_self, nspid, processes;
  std::getline(text, shell_pid);
  std::getline(text, proc_self);
  std::getline(text, nspid);
  std::getline(text, processes);
  EXPECT_LT(std::stoi(shell_pid), 100) << joined.stdout_text;
  // readlink is a child of the shell: its /proc/self is its own pid of the namespace.
  EXPECT_LT(std::stoi(proc_self), 100) << joined.stdout_text;
  std::istringstream levels(nspid.substr(nspid.find(':') + 1));
  std::vector<int> pids{std::istream_iterator<int>(levels), std::istream_iterator<int>()};
  EXPECT_EQ(pids.size(), 1u) << "one pid level: " << nspid;
  EXPECT_LT(std::stoi(processes), 10) << "only the namespace's processes: " << joined.stdout_text;
  judge.stop(0, 0.5);
}

TEST_F(PidNamespaceTest, TheJoinedCommandsExitCodeAndSignalComeThrough) {
  ChildProcess judge = start_judge();
  EXPECT_EQ(run_joined(judge.pid(), "exit 7").exit_code, 7);
  ProcessResult crashed = run_joined(judge.pid(), "kill -SEGV $$");
  EXPECT_EQ(crashed.term_signal, SIGSEGV) << crashed.describe();
  ProcessResult missing = run_joined(judge.pid(), "exec /nonexistent/runner");
  EXPECT_EQ(missing.exit_code, 127);
}

TEST_F(PidNamespaceTest, AJoinedProcessDiesWithTheNamespace) {
  ChildProcess judge = start_judge();
  ChildSpec spec;
  spec.argv = {"sleep", "60"};
  spec.pid_namespace = PidNamespace::join(judge.pid());
  auto runner = ChildProcess::start(spec);
  ASSERT_TRUE(runner.ok()) << runner.error().message;
  kill(judge.pid(), SIGKILL);  // the namespace's init ends: the kernel kills everything in it
  auto start = std::chrono::steady_clock::now();
  ProcessResult ended = runner->wait();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  EXPECT_EQ(ended.term_signal, SIGKILL);
}

TEST_F(PidNamespaceTest, JoiningAProcessThatIsGoneIsAStartError) {
  ProcessSpec spec;
  spec.argv = {"true"};
  spec.pid_namespace = PidNamespace::join(999999999);
  SystemProcessRunner runner;
  auto result = runner.run(spec);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("pid namespace"), std::string::npos)
      << result.error().message;
}

}  // namespace
}  // namespace stitch
