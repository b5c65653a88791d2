// The bench scheduler: which task runs where and when. Workers take tasks through claims/ (each task
// once, whichever worker gets it first), a deadline stops them taking new ones, and with one GPU the
// CPU-bound part comes first, `jobs` tasks at a time (capture and first build), then every task's
// baselines in one batch. Its side effects are behind the interfaces below: the real ones run the
// loop (bench_task.h) and start worker processes (bench_launcher.h); tests give fakes.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "app/bench_tasks.h"
#include "app/progress.h"
#include "bench/bench_results.h"
#include "util/result.h"

namespace stitch::app {

// Runs (or resumes) one task of a bench to its record; `say` sees its progress. Never fails: what
// went wrong is the record's outcome and reason.
class BenchTaskRunner {
 public:
  virtual ~BenchTaskRunner() = default;
  virtual bench::BenchRecord run(const std::filesystem::path& bench_dir, const BenchTask& task,
                                 const ProgressSink& say) = 0;
};

// Captures a task into runs/<level>/ and builds its first program, before the GPU loop. Called
// from `jobs` threads at once; `slot` (0..jobs-1) says which, `log` is the task's log.
class TaskPreparer {
 public:
  virtual ~TaskPreparer() = default;
  virtual Status prepare(const std::filesystem::path& bench_dir, const BenchTask& task, int slot,
                         const ProgressSink& log) = 0;
};

// Starts the workers that do not run in this process, and waits for them.
class WorkerLauncher {
 public:
  virtual ~WorkerLauncher() = default;
  virtual Status start(int worker_index, int device) = 0;
  virtual void wait_all() = 0;
};

// Seconds since the epoch (the deadline's clock).
using EpochClock = std::function<double()>;
double system_epoch_seconds();

struct WorkerOptions {
  int index = 0;
  double deadline_epoch_s = 0;  // 0: none
  EpochClock clock = system_epoch_seconds;
  ProgressSink progress;
};

// Takes tasks of tasks.json (claims/) until none is left or the deadline passes, running each and
// appending its record to results.jsonl. How many tasks this worker ran.
int work(const std::filesystem::path& bench_dir, BenchTaskRunner& runner,
         const WorkerOptions& options);

struct PrepareSummary {
  int tasks = 0;                    // tasks prepared (neither recorded nor captured before)
  std::vector<std::string> failed;  // keys of those whose preparation failed (the loop says why)
};

// Prepares every task not yet recorded or captured, `jobs` at a time, each logging to
// prepare/<level>__<task>.log (a failure's Error last).
PrepareSummary prepare_tasks(const std::filesystem::path& bench_dir, TaskPreparer& preparer,
                             int jobs, const ProgressSink& progress);

struct ScheduleOptions {
  std::vector<int> gpus;  // one worker per device; worker 0 runs here when it is device 0 alone
  int prepare_jobs = 0;   // with one worker: tasks prepared at a time before the loop (0: none)
  double deadline_epoch_s = 0;
  EpochClock clock = system_epoch_seconds;
  ProgressSink progress;
};

struct ScheduleDeps {
  BenchTaskRunner& runner;
  WorkerLauncher& launcher;
  TaskPreparer* preparer = nullptr;
  std::function<void(int jobs)> time_baselines;  // after preparing, with one worker; may be empty
};

struct BenchProgress {
  size_t tasks = 0;
  size_t recorded = 0;
  bool complete() const { return recorded >= tasks; }
};

// Runs the bench whose tasks.json is in bench_dir: prepare and baselines (one worker), the workers,
// then how far it got.
Result<BenchProgress> schedule_bench(const std::filesystem::path& bench_dir,
                                     const ScheduleOptions& options, const ScheduleDeps& deps);

}  // namespace stitch::app
