// The run directory's lock: one process at a time, the holder named in the refusal, a lock of a
// dead process never blocking, one process opening its run twice being one holder.
#include "run/run_lock.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "run/run_dir.h"

namespace stitch::run {
namespace {

fs::path fresh_run(const std::string& name) {
  fs::path runs = fs::temp_directory_path() / ("stitch_run_lock_test_" + name);
  fs::remove_all(runs);
  auto run = RunDir::create(runs, "task");
  EXPECT_TRUE(run.ok());
  return run->root();
}

// A child process that opens `root` as a run directory and keeps it open until killed; returns
// its pid once the lock is taken.
pid_t hold_in_child(const fs::path& root) {
  int ready[2];
  EXPECT_EQ(::pipe(ready), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    auto run = RunDir::open(root);
    const char byte = run.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &byte, 1);
    for (;;)
      ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  EXPECT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(byte, 'y');
  return pid;
}

void kill_child(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

TEST(RunLock, AnotherProcessIsRefusedAndNamed) {
  const fs::path root = fresh_run("refused");
  const pid_t holder = hold_in_child(root);
  auto second = RunDir::open(root);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().kind, ErrorKind::bad_input);
  EXPECT_NE(second.error().message.find("in use by process " + std::to_string(holder)),
            std::string::npos)
      << second.error().message;
  EXPECT_NE(second.error().message.find(" since 20"), std::string::npos);
  auto recorded = read_lock_holder(root);
  ASSERT_TRUE(recorded.ok());
  EXPECT_EQ(recorded->pid, holder);
  EXPECT_FALSE(recorded->host.empty());
  // open_or_adopt and create's lock are the same lock.
  EXPECT_FALSE(RunDir::open_or_adopt(root).ok());
  kill_child(holder);
  // The dead holder's lock file is still there, naming it: it does not block.
  ASSERT_TRUE(fs::exists(root / kRunLockFile));
  auto third = RunDir::open(root);
  ASSERT_TRUE(third.ok()) << third.error().message;
  EXPECT_EQ(read_lock_holder(root)->pid, ::getpid());
}

TEST(RunLock, ACreatedRunIsHeldUntilItsLastRunDirGoes) {
  const fs::path runs = fs::temp_directory_path() / "stitch_run_lock_test_created";
  fs::remove_all(runs);
  fs::path root;
  {
    auto run = RunDir::create(runs, "task");
    ASSERT_TRUE(run.ok());
    root = run->root();
    // The same process opening it again shares the lock.
    auto again = RunDir::open(root);
    ASSERT_TRUE(again.ok()) << again.error().message;
    const pid_t pid = ::fork();
    if (pid == 0) _exit(RunDir::open(root).ok() ? 1 : 0);  // another process: refused
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const pid_t pid = ::fork();
  if (pid == 0) _exit(RunDir::open(root).ok() ? 0 : 1);  // released: taken
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(RunLock, AGarbledLockFileDoesNotBlock) {
  const fs::path runs = fs::temp_directory_path() / "stitch_run_lock_test_garbled";
  fs::remove_all(runs);
  fs::path root;
  {
    auto run = RunDir::create(runs, "task");
    ASSERT_TRUE(run.ok());
    root = run->root();
  }
  std::ofstream(root / kRunLockFile) << "{\"pid\": 1, tor";
  EXPECT_FALSE(read_lock_holder(root).ok());
  auto run = RunDir::open(root);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_TRUE(read_lock_holder(root).ok());
}

}  // namespace
}  // namespace stitch::run
