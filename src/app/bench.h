// `bench`: the loop over many tasks, one worker per GPU, into a bench directory:
//   tasks.json     the task list, fixed when the bench is created (what --resume finishes)
//   runs/<level>/  one run directory per task (resumed in place when a bench is resumed)
//   claims/        one file per task a worker has taken (O_EXCL: no task runs twice at once)
//   results.jsonl  one record per finished task (bench/bench_results.h), appended
//   table.md, report.html   rendered from results.jsonl alone (render_bench_reports)
//   prepare/       the logs of preparing (capture and first build) and the baselines batch
// The scheduling is bench_scheduler.h's; this file wires its real side effects (bench_task.h,
// bench_launcher.h). Baselines are timed within the bench and kept with it (baselines/), so a
// bench resumed on another machine of the same GPU reuses them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "app/loop_session.h"
#include "app/progress.h"
#include "bench/bench_results.h"
#include "util/result.h"

namespace stitch::app {

struct BenchOptions {
  std::vector<std::string> dirs;  // task directories of a new bench, or
  std::string resume;             // the bench directory to continue
  std::string out;                // the new bench's directory (default bench/<timestamp>)
  std::string gpus = "1";         // a count, a list (0,2,3) or all
  std::string pattern;
  int limit = 0;
  double deadline_minutes = 0;
  int prepare_jobs = -1;  // -1: automatic (half the cores, at most 8, with one worker)
  // Per task: the loop's options, with budgets smaller than `run`'s.
  LoopOptions loop = [] {
    LoopOptions loop;
    loop.max_attempts = 12;
    loop.max_minutes = 20;
    loop.refine_attempts = 6;
    return loop;
  }();
  ProgressSink progress;
};

struct BenchRun {
  std::filesystem::path bench_dir;
  size_t tasks = 0;
  size_t recorded = 0;
  bool complete() const { return recorded >= tasks; }
};

// Creates (or resumes) the bench and runs it to its end or deadline. Bad directories, a bench
// already there and a bad --gpus are bad_input.
Result<BenchRun> run_bench(const BenchOptions& options);

// `options` on the track of the bench in `bench_dir` (its tasks.json): a resumed bench keeps its
// own track; an explicit --track naming another one (not the default) is bad_input.
Result<BenchOptions> options_on_bench_track(BenchOptions options,
                                            const std::filesystem::path& bench_dir);

// A worker process of the bench in `bench_dir` (started by bench_launcher.h).
Status run_bench_worker(const std::filesystem::path& bench_dir, int worker_index,
                        const BenchOptions& options);

// The devices of --gpus: a count 1..64, a list 0,1,... or all (every GPU here; device 0 alone when
// there is none).
Result<std::vector<int>> parse_gpus(const std::string& text);

struct BenchReports {
  std::vector<bench::BenchRecord> records;
  int skipped = 0;  // unreadable lines of results.jsonl
  std::filesystem::path table;   // table.md
  std::filesystem::path report;  // report.html
};

// Renders table.md and report.html of `bench_dir` from its results.jsonl alone.
Result<BenchReports> render_bench_reports(const std::filesystem::path& bench_dir);

}  // namespace stitch::app
