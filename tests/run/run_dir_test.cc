// Run directories: unique names, status lifecycle, attempts, the task they hold, and the
// append-only event log.
#include "run/run_dir.h"

#include <fstream>

#include <gtest/gtest.h>

#include "util/fs.h"

namespace stitch::run {
namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("stitch_run_test_" + name);
  fs::remove_all(dir);
  return dir;
}

std::chrono::system_clock::time_point fixed_time() {
  return std::chrono::system_clock::from_time_t(1796000000);  // a fixed instant
}

TEST(RunDir, SameTaskTwiceGetsTwoDirectories) {
  fs::path runs = fresh_dir("twice");
  auto first = RunDir::create(runs, "mlp", fixed_time);
  auto second = RunDir::create(runs, "mlp", fixed_time);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_NE(first->root(), second->root());
  EXPECT_EQ(first->root().filename().string(), "mlp-" + format_timestamp(fixed_time()));
  EXPECT_EQ(second->root().filename().string(), "mlp-" + format_timestamp(fixed_time()) + "-2");
}

TEST(RunDir, StatusIsRunningUntilMarkedComplete) {
  fs::path runs = fresh_dir("status");
  auto run = RunDir::create(runs, "task");
  ASSERT_TRUE(run.ok());
  auto summary = run->read_json("summary.json");
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ((*summary)["status"], "running");
  EXPECT_EQ((*summary)["task"], "task");
  ASSERT_TRUE(run->set_status(RunStatus::complete, {{"nodes", 3}}).ok());
  summary = run->read_json("summary.json");
  EXPECT_EQ((*summary)["status"], "complete");
  EXPECT_EQ((*summary)["nodes"], 3);
  EXPECT_EQ((*summary)["task"], "task");  // earlier fields kept
}

TEST(RunDir, AttemptsAreNumberedUpwards) {
  fs::path runs = fresh_dir("attempts");
  auto run = RunDir::create(runs, "task");
  ASSERT_TRUE(run.ok());
  auto a = run->new_attempt_dir();
  auto b = run->new_attempt_dir();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->filename(), "01");
  EXPECT_EQ(b->filename(), "02");
  auto reopened = RunDir::open(run->root());
  ASSERT_TRUE(reopened.ok());
  auto c = reopened->new_attempt_dir();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->filename(), "03");
}

TEST(RunDir, OpenRejectsNonRunDirectory) {
  fs::path dir = fresh_dir("notrun");
  fs::create_directories(dir);
  auto run = RunDir::open(dir);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("not a run directory"), std::string::npos);
}

TEST(RunDir, BareCaptureDirectoryIsAdoptedOthersAreNot) {
  fs::path capture = fresh_dir("adopt") / "19_ReLU";
  fs::create_directories(capture);
  EXPECT_FALSE(RunDir::open_or_adopt(capture).ok()) << "no graph.json: not a capture";
  std::ofstream(capture / "graph.json") << "{}";
  auto adopted = RunDir::open_or_adopt(capture);
  ASSERT_TRUE(adopted.ok()) << adopted.error().message;
  auto summary = adopted->read_json("summary.json");
  ASSERT_TRUE(summary.ok());
  EXPECT_EQ((*summary)["task"], "19_ReLU");
  std::ifstream graph(capture / "graph.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(graph), {}), "{}") << "left as it was";
  auto reopened = RunDir::open_or_adopt(capture);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(*reopened->new_attempt_dir(), capture / "attempts" / "01");
}

TEST(RunDir, TaskNameIsTheOneSummaryJsonNames) {
  fs::path runs = fresh_dir("task_name");
  auto run = RunDir::create(runs, "mlp", fixed_time);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->task_name(), "mlp") << "not the directory's name, mlp-<time>";
  ASSERT_TRUE(run->write_json("summary.json", {{"task", 7}}).ok());
  EXPECT_EQ(run->task_name(), run->root().filename().string()) << "a mistyped name is none";
}

TEST(RunDir, TaskNameIsSanitised) {
  EXPECT_EQ(task_name_from_path("/a/b/19_ReLU.py"), "19_ReLU");
  EXPECT_EQ(task_name_from_path("we ird$name.py"), "we_ird_name");
}

TEST(EventLog, AppendsContinueSequenceAcrossReopen) {
  fs::path dir = fresh_dir("events");
  fs::create_directories(dir);
  fs::path path = dir / "events.jsonl";
  {
    auto log = EventLog::open(path);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(log->append("a", {{"x", 1}}).ok());
    ASSERT_TRUE(log->append("b").ok());
  }
  auto log = EventLog::open(path);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->next_seq(), 2);
  ASSERT_TRUE(log->append("c").ok());
  auto events = read_events(path);
  ASSERT_TRUE(events.ok());
  ASSERT_EQ(events->size(), 3u);
  EXPECT_EQ((*events)[0]["event"], "a");
  EXPECT_EQ((*events)[0]["x"], 1);
  EXPECT_EQ((*events)[2]["seq"], 2);
}

TEST(EventLog, TornLastLineIsSkippedAndFencedOff) {
  fs::path dir = fresh_dir("torn");
  fs::create_directories(dir);
  fs::path path = dir / "events.jsonl";
  {
    std::ofstream out(path);
    out << "{\"seq\":0,\"event\":\"a\"}\n{\"seq\":1,\"event\":\"b\",\"partial";  // crash mid-line
  }
  auto before = read_events(path);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->size(), 1u);
  auto log = EventLog::open(path);
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(log->next_seq(), 1);
  ASSERT_TRUE(log->append("c").ok());
  auto after = read_events(path);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 2u);
  EXPECT_EQ((*after)[1]["event"], "c");
  EXPECT_EQ((*after)[1]["seq"], 1);
}

}  // namespace
}  // namespace stitch::run
