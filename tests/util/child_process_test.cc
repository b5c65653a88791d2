// ChildProcess: output to files, poll and wait, stop of a child that ignores SIGTERM, the group
// killed whatever way the child ends, starts that fail, and the group registry.
#include "util/child_process.h"

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include <gtest/gtest.h>

#include "process_test_support.h"
#include "util/child_groups.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using test_support::group_gone;
using test_support::make_temp_dir;
using test_support::process_gone;
using test_support::read_pid;

ChildSpec shell(const std::string& script) {
  ChildSpec spec;
  spec.argv = {"/bin/sh", "-c", script};
  return spec;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool registered(pid_t group) {
  std::vector<pid_t> groups = registered_child_groups();
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

TEST(ChildProcess, OneFileForStdoutAndStderr) {
  fs::path dir = make_temp_dir("childprocess");
  ChildSpec spec = shell("echo out; echo err >&2; echo out2; exit 4");
  spec.stdout_path = spec.stderr_path = dir / "log.txt";
  spec.env["STITCH_UNUSED"] = "1";
  auto child = ChildProcess::start(spec);
  ASSERT_TRUE(child.ok()) << child.error().message;
  ProcessResult ended = child->wait();
  EXPECT_EQ(ended.exit_code, 4);
  EXPECT_EQ(ended.describe(), "exit code 4");
  EXPECT_EQ(read_text(dir / "log.txt"), "out\nerr\nout2\n");
  fs::remove_all(dir);
}

TEST(ChildProcess, PollsUntilItEndsAndIsUnregisteredThen) {
  fs::path dir = make_temp_dir("childprocess");
  ChildSpec spec = shell("while [ ! -e go ]; do sleep 0.01; done; echo \"$STITCH_VALUE\"");
  spec.cwd = dir;
  spec.env["STITCH_VALUE"] = "seen";
  spec.stdout_path = dir / "out.txt";
  auto child = ChildProcess::start(spec);
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_FALSE(child->poll());
  EXPECT_FALSE(child->exited());
  EXPECT_TRUE(registered(child->pid()));
  std::ofstream(dir / "go") << "";
  std::optional<ProcessResult> ended;
  for (int i = 0; i < 500 && !ended; ++i) {
    ended = child->poll();
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(ended);
  EXPECT_TRUE(ended->succeeded());
  EXPECT_FALSE(registered(child->pid()));
  EXPECT_EQ(read_text(dir / "out.txt"), "seen\n");
  fs::remove_all(dir);
}

TEST(ChildProcess, ExitKillsWhatItLeftInItsGroup) {
  fs::path dir = make_temp_dir("childprocess");
  fs::path pid_file = dir / "grandchild.pid";
  auto child = ChildProcess::start(shell("sleep 300 & echo $! > " + pid_file.string()));
  ASSERT_TRUE(child.ok()) << child.error().message;
  pid_t grandchild = read_pid(pid_file);
  ASSERT_GT(grandchild, 0);
  EXPECT_EQ(child->wait().exit_code, 0);
  EXPECT_TRUE(process_gone(grandchild)) << "the child's own child outlived it";
  fs::remove_all(dir);
}

TEST(ChildProcess, StopSendsKillToAChildThatIgnoresTerm) {
  fs::path dir = make_temp_dir("childprocess");
  fs::path ready = dir / "ready";
  auto child = ChildProcess::start(shell("trap '' TERM; echo $$ > " + ready.string() +
                                         "; while :; do sleep 1; done"));
  ASSERT_TRUE(child.ok()) << child.error().message;
  ASSERT_GT(read_pid(ready), 0);
  pid_t group = child->pid();
  auto started = std::chrono::steady_clock::now();
  ProcessResult ended = child->stop(0.05, 0.2);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_TRUE(ended.timed_out);
  EXPECT_EQ(ended.term_signal, SIGKILL);
  EXPECT_EQ(child->stop(0).term_signal, SIGKILL) << "stop is idempotent";
  EXPECT_TRUE(group_gone(group));
  fs::remove_all(dir);
}

TEST(ChildProcess, DestructorKillsTheGroup) {
  fs::path dir = make_temp_dir("childprocess");
  fs::path pid_file = dir / "grandchild.pid";
  pid_t group = -1;
  {
    auto child = ChildProcess::start(shell("sleep 300 & echo $! > " + pid_file.string() + "; wait"));
    ASSERT_TRUE(child.ok()) << child.error().message;
    ASSERT_GT(read_pid(pid_file), 0);
    group = child->pid();
    ChildProcess moved = std::move(*child);  // the moved-from handle owns nothing
  }
  EXPECT_TRUE(group_gone(group));
  EXPECT_FALSE(registered(group));
  fs::remove_all(dir);
}

TEST(ChildProcess, StartsThatFailAreErrors) {
  ChildSpec not_a_command;
  not_a_command.argv = {"definitely-not-a-command-stitch"};
  auto missing = ChildProcess::start(not_a_command);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("command not found"), std::string::npos);
  EXPECT_EQ(missing.error().kind, ErrorKind::machine);

  ChildSpec no_dir = shell("true");
  no_dir.cwd = "/no/such/dir";
  auto in_missing_dir = ChildProcess::start(no_dir);
  ASSERT_FALSE(in_missing_dir.ok());
  EXPECT_NE(in_missing_dir.error().message.find("/no/such/dir"), std::string::npos);

  ChildSpec bad_log = shell("true");
  bad_log.stdout_path = "/no/such/dir/log.txt";
  EXPECT_FALSE(ChildProcess::start(bad_log).ok());
  EXPECT_TRUE(registered_child_groups().empty()) << "a failed start left a group registered";
}

}  // namespace
}  // namespace stitch
