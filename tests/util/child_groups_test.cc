// Every child dies with the orchestrator: a forked copy of this test plays the orchestrator, starts
// a child through util (run to completion, ChildProcess, LineChild), and is sent SIGTERM, SIGINT or
// SIGHUP; it must die of that signal and leave no process of the child's group alive. Also the
// second layer: an orchestrator SIGKILLed takes its direct child along (PR_SET_PDEATHSIG).
#include "util/child_groups.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "process_test_support.h"
#include "util/child_process.h"
#include "util/line_child.h"
#include "util/process.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using test_support::group_gone;
using test_support::make_temp_dir;
using test_support::process_gone;
using test_support::read_pid;

// A shell that writes its group id to `group_file`, starts a busy loop (the task's Python process
// at 100% CPU, as in the capture that outlived a Ctrl-C), writes that pid to `busy_file`, and waits.
std::vector<std::string> busy_family(const fs::path& group_file, const fs::path& busy_file) {
  std::string busy = find_in_path("python3").empty() ? "sh -c 'while :; do :; done'"
                                                     : "python3 -c 'while True: pass'";
  return {"/bin/sh", "-c",
          busy + " & echo $! > " + busy_file.string() + "; echo $$ > " + group_file.string() +
              "; wait"};
}

// Forks the orchestrator: it runs `start_child` (a Result, kept alive) and then waits to be
// signalled.
template <typename Start>
pid_t fork_orchestrator(Start start_child) {
  pid_t pid = fork();
  if (pid == 0) {
    auto child = start_child();
    if (!child.ok()) _exit(3);
    for (;;) pause();
  }
  return pid;
}

struct Family {
  pid_t group = -1;
  pid_t busy = -1;
};

class ChildGroups : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("childgroups"); }
  void TearDown() override {
    // Should the test fail, no busy loop is left spinning.
    if (family_.group > 0) kill(-family_.group, SIGKILL);
    fs::remove_all(dir_);
  }

  std::vector<std::string> family_command() {
    return busy_family(dir_ / "group.pid", dir_ / "busy.pid");
  }
  Family read_family() {
    family_ = {read_pid(dir_ / "group.pid"), read_pid(dir_ / "busy.pid")};
    return family_;
  }

  // Sends `signal_number` to the orchestrator, checks it died of it and took the family along.
  void expect_family_dies_with_orchestrator(pid_t orchestrator, int signal_number) {
    Family family = read_family();
    ASSERT_GT(family.group, 0);
    ASSERT_GT(family.busy, 0);
    ASSERT_EQ(getpgid(family.busy), family.group) << "the busy loop is not in the child's group";
    ASSERT_EQ(kill(orchestrator, signal_number), 0);
    int status = 0;
    ASSERT_EQ(waitpid(orchestrator, &status, 0), orchestrator);
    EXPECT_TRUE(WIFSIGNALED(status));
    if (WIFSIGNALED(status)) {
      EXPECT_EQ(WTERMSIG(status), signal_number);
    }
    EXPECT_TRUE(group_gone(family.group)) << "the child's group outlived the orchestrator";
    EXPECT_TRUE(process_gone(family.busy)) << "the busy loop outlived the orchestrator";
  }

  fs::path dir_;
  Family family_;
};

TEST_F(ChildGroups, SigtermDuringRunToCompletionKillsTheGroup) {
  ProcessSpec spec;
  spec.argv = family_command();
  pid_t orchestrator = fork_orchestrator([&] { return SystemProcessRunner().run(spec); });
  expect_family_dies_with_orchestrator(orchestrator, SIGTERM);
}

TEST_F(ChildGroups, SigintWithAStartedChildKillsTheGroup) {
  ChildSpec spec;
  spec.argv = family_command();
  pid_t orchestrator = fork_orchestrator([&] { return ChildProcess::start(spec); });
  expect_family_dies_with_orchestrator(orchestrator, SIGINT);
}

TEST_F(ChildGroups, SighupWithALineChildKillsTheGroup) {
  ChildSpec spec;
  spec.argv = family_command();
  pid_t orchestrator = fork_orchestrator([&] { return LineChild::spawn(spec); });
  expect_family_dies_with_orchestrator(orchestrator, SIGHUP);
}

TEST_F(ChildGroups, SigkillOfTheOrchestratorTakesItsChildAlong) {
  fs::path pid_file = dir_ / "child.pid";
  pid_t orchestrator = fork_orchestrator([&] {
    ChildSpec spec;
    spec.argv = {"sleep", "300"};
    auto child = ChildProcess::start(spec);
    if (child.ok()) std::ofstream(pid_file) << child->pid() << "\n";
    return child;
  });
  pid_t child = read_pid(pid_file);
  ASSERT_GT(child, 0);
  ASSERT_EQ(kill(orchestrator, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(orchestrator, &status, 0), orchestrator);
  EXPECT_TRUE(process_gone(child)) << "the parent-death signal did not end the child";
}

TEST(ChildGroupRegistry, RegistersAndUnregisters) {
  ASSERT_TRUE(register_child_group(999999));
  ASSERT_TRUE(register_child_group(999998));
  std::vector<pid_t> groups = registered_child_groups();
  EXPECT_NE(std::find(groups.begin(), groups.end(), 999999), groups.end());
  unregister_child_group(999999);
  unregister_child_group(999998);
  EXPECT_TRUE(registered_child_groups().empty());
}

TEST(ChildGroupRegistry, HandlersAreInstalledByTheFirstSpawn) {
  SystemProcessRunner runner;
  ProcessSpec spec;
  spec.argv = {"true"};
  ASSERT_TRUE(runner.run(spec).ok());
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    ASSERT_EQ(sigaction(signal_number, nullptr, &current), 0);
    EXPECT_NE(current.sa_handler, SIG_DFL) << "no handler for signal " << signal_number;
  }
}

}  // namespace
}  // namespace stitch
