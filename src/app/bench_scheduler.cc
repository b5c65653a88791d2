// The bench scheduler (bench_scheduler.h).
#include "app/bench_scheduler.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "util/fs.h"

namespace stitch::app {

namespace fs = std::filesystem;

double system_epoch_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int work(const fs::path& bench_dir, BenchTaskRunner& runner, const WorkerOptions& options) {
  auto tasks = read_tasks(bench_dir);
  if (!tasks.ok()) return 0;
  const std::string prefix = fmt::format("[w{}] ", options.index);
  int ran = 0;
  for (const auto& task : *tasks) {
    if (options.deadline_epoch_s > 0 && options.clock() >= options.deadline_epoch_s) {
      say(options.progress, prefix + "deadline reached: taking no more tasks");
      break;
    }
    if (!claim_task(bench_dir, task, fmt::format("worker {} pid {}\n", options.index, ::getpid())))
      continue;  // another worker has it, or it is finished
    auto task_say = [&](const std::string& line) {
      say(options.progress, fmt::format("{}{}: {}", prefix, task.task, line));
    };
    const bench::BenchRecord record = runner.run(bench_dir, task, task_say);
    if (Status appended = bench::append_record(bench_dir / "results.jsonl", record); !appended.ok())
      task_say("error: " + appended.error().message);
    ++ran;
  }
  return ran;
}

namespace {

// Appends the lines of one task's preparation to its log.
class TaskLog {
 public:
  explicit TaskLog(const fs::path& path) : out_(path, std::ios::trunc) {}
  void line(const std::string& text) {
    std::lock_guard lock(mutex_);
    out_ << text << "\n";
    out_.flush();
  }

 private:
  std::mutex mutex_;
  std::ofstream out_;
};

}  // namespace

PrepareSummary prepare_tasks(const fs::path& bench_dir, TaskPreparer& preparer, int jobs,
                             const ProgressSink& progress) {
  PrepareSummary summary;
  auto tasks = read_tasks(bench_dir);
  if (!tasks.ok() || jobs <= 0) return summary;
  const std::set<std::string> recorded = recorded_keys(bench_dir);
  std::vector<BenchTask> todo;
  for (const auto& task : *tasks)
    if (!recorded.count(task.key()) && !has_capture(bench_dir, task)) todo.push_back(task);
  summary.tasks = static_cast<int>(todo.size());
  if (todo.empty()) return summary;
  (void)make_dirs(bench_dir / "prepare");
  say(progress, fmt::format("preparing {} tasks ({} at a time): capture and first build",
                            todo.size(), jobs));
  const auto started = std::chrono::steady_clock::now();
  std::atomic<size_t> next = 0;
  std::mutex failed_mutex;
  auto prepare_some = [&](int slot) {
    for (size_t i = next++; i < todo.size(); i = next++) {
      const BenchTask& task = todo[i];
      (void)make_dirs(bench_dir / "runs" / task.level);
      TaskLog log(bench_dir / "prepare" / (task.claim_name() + ".log"));
      Status prepared =
          preparer.prepare(bench_dir, task, slot, [&](const std::string& l) { log.line(l); });
      if (prepared.ok()) continue;
      log.line("error: " + prepared.error().message);
      std::lock_guard lock(failed_mutex);
      summary.failed.push_back(task.key());
    }
  };
  std::vector<std::thread> threads;
  for (int slot = 0; slot < std::min<int>(jobs, static_cast<int>(todo.size())); ++slot)
    threads.emplace_back(prepare_some, slot);
  for (auto& thread : threads)
    thread.join();
  say(progress,
      fmt::format("prepared {} tasks in {:.0f} s ({} refused or failed to build: the loop says why)",
                  todo.size(),
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(),
                  summary.failed.size()));
  return summary;
}

Result<BenchProgress> schedule_bench(const fs::path& bench_dir, const ScheduleOptions& options,
                                     const ScheduleDeps& deps) {
  STITCH_TRY(make_dirs(bench_dir / "claims"));
  if (options.gpus.size() == 1) {
    // Preparing fills worker 0's build cache: worth it when worker 0 takes every task.
    if (deps.preparer) prepare_tasks(bench_dir, *deps.preparer, options.prepare_jobs,
                                     options.progress);
    if (deps.time_baselines) deps.time_baselines(options.prepare_jobs);
  }
  // Worker 0 runs here when it is the only one, on device 0; otherwise every worker is started by
  // the launcher (a process pinned to its GPU: CUDA_VISIBLE_DEVICES must be set before CUDA starts).
  const bool in_process = options.gpus.size() == 1 && options.gpus[0] == 0;
  for (size_t i = in_process ? 1 : 0; i < options.gpus.size(); ++i)
    if (Status started = deps.launcher.start(static_cast<int>(i), options.gpus[i]); !started.ok())
      say(options.progress, "error: " + started.error().message);
  if (in_process)
    work(bench_dir, deps.runner,
         {0, options.deadline_epoch_s, options.clock ? options.clock : system_epoch_seconds,
          options.progress});
  deps.launcher.wait_all();
  STITCH_ASSIGN_OR_RETURN(std::vector<BenchTask> tasks, read_tasks(bench_dir));
  return BenchProgress{tasks.size(), recorded_keys(bench_dir).size()};
}

}  // namespace stitch::app
