// A bench keeps the precision track it was created with: tasks.json records it, a resume takes it
// (and refuses another one named with --track), and the baselines it times are on it.
#include <algorithm>

#include <gtest/gtest.h>

#include "app/bench.h"
#include "app/bench_task.h"
#include "app/bench_tasks.h"
#include "temp_dir.h"
#include "util/fs.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<BenchTask> two_tasks() {
  return {{"levelT", "alpha", "levelT/alpha.py"}, {"levelT", "beta", "levelT/beta.py"}};
}

TEST(BenchTrack, TasksFileRecordsTheTrack) {
  TempDir dir("bench_track_file");
  ASSERT_TRUE(write_tasks(dir.path(), two_tasks(), "tf32").ok());
  auto file = read_task_file(dir.path());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->track, "tf32");
  EXPECT_EQ(file->tasks, two_tasks());
}

TEST(BenchTrack, ABenchWrittenWithoutATrackRanFp32) {
  TempDir dir("bench_track_old");
  ASSERT_TRUE(write_file_atomic(dir.path() / "tasks.json", R"({"tasks": []})").ok());
  auto file = read_task_file(dir.path());
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->track, "fp32");
}

TEST(BenchTrack, AResumeKeepsTheBenchsTrack) {
  TempDir dir("bench_track_resume");
  ASSERT_TRUE(write_tasks(dir.path(), two_tasks(), "tf32").ok());
  BenchOptions options;  // --resume without --track: the default
  auto resumed = options_on_bench_track(options, dir.path());
  ASSERT_TRUE(resumed.ok()) << resumed.error().message;
  EXPECT_EQ(resumed->loop.track, "tf32");

  options.loop.track = "tf32";  // the same track named again
  ASSERT_TRUE(options_on_bench_track(options, dir.path()).ok());

  options.loop.track = "bf16";  // another one: refused, not ignored
  auto refused = options_on_bench_track(options, dir.path());
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::bad_input);
  EXPECT_NE(refused.error().message.find("tf32"), std::string::npos);
}

TEST(BenchTrack, BaselinesAreTimedOnTheTrackForCapturedTasksOnly) {
  TempDir dir("bench_track_baselines");
  ASSERT_TRUE(write_tasks(dir.path(), two_tasks(), "tf32").ok());
  EXPECT_TRUE(baseline_batch_arguments(dir.path(), "tf32", 2).empty());  // nothing captured

  const fs::path run = dir.path() / "runs" / "levelT" / "beta-20261201-000000";
  ASSERT_TRUE(make_dirs(run).ok());
  ASSERT_TRUE(write_file_atomic(run / "graph.json", "{}").ok());
  const std::vector<std::string> args = baseline_batch_arguments(dir.path(), "tf32", 2);
  auto track = std::find(args.begin(), args.end(), "--track");
  ASSERT_NE(track, args.end());
  ASSERT_NE(track + 1, args.end());
  EXPECT_EQ(*(track + 1), "tf32");
  EXPECT_EQ(std::count(args.begin(), args.end(), "--graph-dir"), 1);
  EXPECT_NE(std::find(args.begin(), args.end(), run.string()), args.end());
}

}  // namespace
}  // namespace stitch::app
