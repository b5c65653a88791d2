// LineChild: line I/O, timeouts, the end of stdout, a start that fails, and the process group
// killed on stop.
#include "util/line_child.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

#include "process_test_support.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using test_support::make_temp_dir;
using test_support::process_gone;
using test_support::read_pid;

ChildSpec command(std::vector<std::string> argv) {
  ChildSpec spec;
  spec.argv = std::move(argv);
  return spec;
}

TEST(LineChild, EchoesLinesAndReportsTheEnd) {
  auto child = LineChild::spawn(command({"cat"}));
  ASSERT_TRUE(child.ok()) << child.error().message;
  ASSERT_TRUE((*child)->write_line("hello").ok());
  auto read = (*child)->read_line(5);
  ASSERT_EQ(read.status, LineChild::ReadStatus::line);
  EXPECT_EQ(read.line, "hello");
  EXPECT_EQ((*child)->read_line(0.05).status, LineChild::ReadStatus::timeout);
  (*child)->close_stdin();
  EXPECT_EQ((*child)->read_line(5).status, LineChild::ReadStatus::closed);
  ProcessResult ended = (*child)->stop(5);
  EXPECT_EQ(ended.exit_code, 0);
  EXPECT_FALSE(ended.timed_out);
}

TEST(LineChild, ReturnsALastLineWithoutNewline) {
  auto child = LineChild::spawn(command({"printf", "a\\nb"}));
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_EQ((*child)->read_line(5).line, "a");
  auto last = (*child)->read_line(5);
  EXPECT_EQ(last.status, LineChild::ReadStatus::line);
  EXPECT_EQ(last.line, "b");
  EXPECT_EQ((*child)->read_line(5).status, LineChild::ReadStatus::closed);
}

TEST(LineChild, MissingCommandIsAnError) {
  auto child = LineChild::spawn(command({"/no/such/judge"}));
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.error().message.find("/no/such/judge"), std::string::npos);
  EXPECT_EQ(child.error().kind, ErrorKind::machine);
}

TEST(LineChild, MissingWorkingDirectoryIsAnError) {
  ChildSpec spec = command({"cat"});
  spec.cwd = "/no/such/dir";
  auto child = LineChild::spawn(spec);
  ASSERT_FALSE(child.ok());
  EXPECT_NE(child.error().message.find("/no/such/dir"), std::string::npos);
}

TEST(LineChild, WritesStderrToItsFile) {
  fs::path dir = make_temp_dir("linechild");
  ChildSpec spec = command({"sh", "-c", "echo oops >&2"});
  spec.stderr_path = dir / "stderr.txt";
  auto child = LineChild::spawn(spec);
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_EQ((*child)->stop(5).exit_code, 0);
  std::ifstream in(spec.stderr_path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "oops\n");
  fs::remove_all(dir);
}

TEST(LineChild, StopKillsTheWholeProcessGroup) {
  fs::path dir = make_temp_dir("linechild");
  fs::path pid_file = dir / "grandchild.pid";
  ChildSpec spec = command(
      {"bash", "-c", "sleep 300 & echo $! > " + pid_file.string() + "; trap '' TERM; sleep 300"});
  spec.stderr_path = dir / "stderr.txt";
  auto child = LineChild::spawn(spec);
  ASSERT_TRUE(child.ok()) << child.error().message;
  pid_t grandchild = read_pid(pid_file);
  ASSERT_GT(grandchild, 0);
  pid_t pid = (*child)->pid();
  auto started = std::chrono::steady_clock::now();
  ProcessResult ended = (*child)->stop(0.1, 0.2);  // ignores SIGTERM: SIGKILL after 0.2 s
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_TRUE(ended.timed_out);
  EXPECT_TRUE(process_gone(pid));
  EXPECT_TRUE(process_gone(grandchild)) << "the child's own child outlived it";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch
