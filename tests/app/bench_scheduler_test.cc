// The bench scheduler with fakes for the loop, the preparation and the worker processes: claims are
// exclusive and every task runs once across workers, a deadline stops taking tasks and a resume
// finishes exactly the rest, and a failed preparation is logged and counted.
#include "app/bench_scheduler.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "temp_dir.h"
#include "util/fs.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::vector<BenchTask> make_tasks(int count) {
  std::vector<BenchTask> tasks;
  for (int i = 0; i < count; ++i)
    tasks.push_back({"levelT", "task" + std::to_string(i), "levelT/task" + std::to_string(i) + ".py"});
  return tasks;
}

// Passes every task; counts the runs of each; each run moves `clock` on by `seconds_per_task`.
class FakeRunner final : public BenchTaskRunner {
 public:
  bench::BenchRecord run(const fs::path&, const BenchTask& task, const ProgressSink&) override {
    {
      std::lock_guard lock(mutex_);
      ++runs_[task.key()];
      now_ += seconds_per_task;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // let workers interleave
    bench::BenchRecord record;
    record.task = task.task;
    record.level = task.level;
    record.outcome = bench::BenchOutcome::passed;
    return record;
  }
  EpochClock clock() {
    return [this] {
      std::lock_guard lock(mutex_);
      return now_;
    };
  }
  std::map<std::string, int> runs() {
    std::lock_guard lock(mutex_);
    return runs_;
  }
  double seconds_per_task = 0;

 private:
  std::mutex mutex_;
  std::map<std::string, int> runs_;
  double now_ = 1000;
};

// Workers as threads of this process, each running work() as a worker process would.
class ThreadLauncher final : public WorkerLauncher {
 public:
  ThreadLauncher(fs::path bench_dir, BenchTaskRunner& runner)
      : bench_dir_(std::move(bench_dir)), runner_(runner) {}
  Status start(int worker_index, int device) override {
    devices.push_back(device);
    threads_.emplace_back([this, worker_index] {
      work(bench_dir_, runner_, {worker_index, 0, system_epoch_seconds, {}});
    });
    return {};
  }
  void wait_all() override {
    for (auto& thread : threads_)
      thread.join();
    threads_.clear();
  }
  std::vector<int> devices;

 private:
  fs::path bench_dir_;
  BenchTaskRunner& runner_;
  std::vector<std::thread> threads_;
};

// Captures a task (a run directory with graph.json) unless it is named in `refuse`.
class FakePreparer final : public TaskPreparer {
 public:
  Status prepare(const fs::path& bench_dir, const BenchTask& task, int slot,
                 const ProgressSink& log) override {
    {
      std::lock_guard lock(mutex_);
      prepared.push_back(task.key());
      max_slot = std::max(max_slot, slot);
    }
    log("preparing " + task.task);
    if (task.task == refuse) return make_error("the plan was refused: convolution");
    const fs::path run = bench_dir / "runs" / task.level / (task.task + "-20260101-000000");
    fs::create_directories(run);
    std::ofstream(run / "graph.json") << "{}";
    return {};
  }
  std::string refuse;
  std::vector<std::string> prepared;
  int max_slot = -1;

 private:
  std::mutex mutex_;
};

size_t result_lines(const fs::path& bench_dir) {
  auto text = read_file(bench_dir / "results.jsonl");
  return text.ok() ? std::count(text->begin(), text->end(), '\n') : 0;
}

size_t claims(const fs::path& bench_dir) {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(bench_dir / "claims"))
    ++count;
  return count;
}

TEST(BenchScheduler, ClaimsAreExclusiveAndEveryTaskRunsOnceAcrossWorkers) {
  TempDir dir("scheduler_claims");
  ASSERT_TRUE(write_tasks(dir.path(), make_tasks(40), "fp32").ok());
  FakeRunner runner;
  ThreadLauncher launcher(dir.path(), runner);
  ScheduleOptions options;
  options.gpus = {0, 1, 2, 3};  // every worker started by the launcher
  auto progress = schedule_bench(dir.path(), options, {runner, launcher, nullptr, {}});
  ASSERT_TRUE(progress.ok()) << progress.error().message;
  EXPECT_EQ(launcher.devices, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(progress->tasks, 40u);
  EXPECT_EQ(progress->recorded, 40u);
  EXPECT_TRUE(progress->complete());
  EXPECT_EQ(result_lines(dir.path()), 40u);  // one record each, no duplicates
  EXPECT_EQ(claims(dir.path()), 40u);
  const auto runs = runner.runs();
  EXPECT_EQ(runs.size(), 40u);
  for (const auto& [key, count] : runs)
    EXPECT_EQ(count, 1) << key;
}

TEST(BenchScheduler, OneWorkerOnDeviceZeroRunsInProcess) {
  TempDir dir("scheduler_in_process");
  ASSERT_TRUE(write_tasks(dir.path(), make_tasks(3), "fp32").ok());
  FakeRunner runner;
  ThreadLauncher launcher(dir.path(), runner);
  ScheduleOptions options;
  options.gpus = {0};
  auto progress = schedule_bench(dir.path(), options, {runner, launcher, nullptr, {}});
  ASSERT_TRUE(progress.ok());
  EXPECT_TRUE(launcher.devices.empty());
  EXPECT_TRUE(progress->complete());
}

TEST(BenchScheduler, DeadlineStopsTakingTasksAndResumeFinishesTheRest) {
  TempDir dir("scheduler_deadline");
  ASSERT_TRUE(write_tasks(dir.path(), make_tasks(5), "fp32").ok());
  FakeRunner runner;
  runner.seconds_per_task = 60;
  ThreadLauncher launcher(dir.path(), runner);
  ScheduleOptions options;
  options.gpus = {0};
  options.clock = runner.clock();
  options.deadline_epoch_s = 1000 + 90;  // the third task would start at 1120
  std::vector<std::string> lines;
  options.progress = [&](const std::string& line) { lines.push_back(line); };
  auto stopped = schedule_bench(dir.path(), options, {runner, launcher, nullptr, {}});
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->recorded, 2u);
  EXPECT_FALSE(stopped->complete());
  EXPECT_EQ(claims(dir.path()), 2u);  // nothing claimed past the deadline
  EXPECT_NE(std::find(lines.begin(), lines.end(), "[w0] deadline reached: taking no more tasks"),
            lines.end());

  // An interrupted task (claimed, no record) is freed by the resume and run again.
  std::ofstream(dir.path() / "claims" / "levelT__task2") << "worker 0 pid 1\n";
  free_interrupted_claims(dir.path());
  EXPECT_EQ(claims(dir.path()), 2u);
  options.deadline_epoch_s = 0;
  auto resumed = schedule_bench(dir.path(), options, {runner, launcher, nullptr, {}});
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed->complete());
  EXPECT_EQ(result_lines(dir.path()), 5u);
  for (const auto& [key, count] : runner.runs())
    EXPECT_EQ(count, 1) << key;
}

TEST(BenchScheduler, PrepareFailuresAreLoggedAndCounted) {
  TempDir dir("scheduler_prepare");
  ASSERT_TRUE(write_tasks(dir.path(), make_tasks(4), "fp32").ok());
  FakePreparer preparer;
  preparer.refuse = "task2";
  auto summary = prepare_tasks(dir.path(), preparer, 2, {});
  EXPECT_EQ(summary.tasks, 4);
  EXPECT_EQ(summary.failed, (std::vector<std::string>{"levelT/task2"}));
  EXPECT_LE(preparer.max_slot, 1);
  auto failed_log = read_file(dir.path() / "prepare" / "levelT__task2.log");
  ASSERT_TRUE(failed_log.ok());
  EXPECT_EQ(*failed_log, "preparing task2\nerror: the plan was refused: convolution\n");
  auto good_log = read_file(dir.path() / "prepare" / "levelT__task0.log");
  ASSERT_TRUE(good_log.ok());
  EXPECT_EQ(*good_log, "preparing task0\n");
  // Captured tasks are not prepared again; the refused one is tried again.
  preparer.prepared.clear();
  auto again = prepare_tasks(dir.path(), preparer, 2, {});
  EXPECT_EQ(again.tasks, 1);
  EXPECT_EQ(preparer.prepared, (std::vector<std::string>{"levelT/task2"}));
}

TEST(BenchScheduler, PreparesAndTimesBaselinesOnlyWithOneWorker) {
  TempDir dir("scheduler_prepare_workers");
  ASSERT_TRUE(write_tasks(dir.path(), make_tasks(2), "fp32").ok());
  FakeRunner runner;
  ThreadLauncher launcher(dir.path(), runner);
  FakePreparer preparer;
  int baselines = 0;
  ScheduleOptions options;
  options.gpus = {0, 1};
  options.prepare_jobs = 2;
  auto two = schedule_bench(dir.path(), options,
                            {runner, launcher, &preparer, [&](int) { ++baselines; }});
  ASSERT_TRUE(two.ok());
  EXPECT_TRUE(preparer.prepared.empty());
  EXPECT_EQ(baselines, 0);

  TempDir one_dir("scheduler_prepare_one");
  ASSERT_TRUE(write_tasks(one_dir.path(), make_tasks(2), "fp32").ok());
  ThreadLauncher one_launcher(one_dir.path(), runner);
  options.gpus = {0};
  auto one = schedule_bench(one_dir.path(), options,
                            {runner, one_launcher, &preparer, [&](int jobs) { baselines = jobs; }});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(preparer.prepared.size(), 2u);
  EXPECT_EQ(baselines, 2);
  EXPECT_TRUE(one->complete());
}

}  // namespace
}  // namespace stitch::app
