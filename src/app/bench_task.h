// The real side effects of the bench scheduler (bench_scheduler.h): one task through the loop
// (capture, loop_session.h, its record), its preparation by the built-in Coder in-process
// (generate.h), and every task's baselines timed in one batch by the judge.
#pragma once

#include <filesystem>
#include <string>

#include "agents/run_state.h"
#include "app/bench_scheduler.h"
#include "app/loop_session.h"
#include "harness/harness.h"

namespace stitch::app {

// What a finished loop says of a task: passed, the last verdict of a loop that failed (refused
// when no program was verified at all), or the loop's own ending (refused, no_gpu, ...).
bench::BenchOutcome bench_outcome(const agents::RunState& state);

// The record of a task whose loop ended: times of the best attempt, the plan's floor, the first
// profile's top kernels.
bench::BenchRecord record_for(const BenchTask& task, const std::filesystem::path& run_dir,
                              const agents::RunState& state, const std::string& gpu,
                              const std::string& track);

class LoopTaskRunner final : public BenchTaskRunner {
 public:
  LoopTaskRunner(LoopOptions loop, int worker_index, harness::HarnessLocation location)
      : loop_(std::move(loop)), worker_index_(worker_index), location_(std::move(location)) {}
  bench::BenchRecord run(const std::filesystem::path& bench_dir, const BenchTask& task,
                         const ProgressSink& say) override;

 private:
  LoopOptions loop_;
  int worker_index_;
  harness::HarnessLocation location_;
};

// generate_program on the task into runs/<level>/, building into worker 0's build cache.
class CoderTaskPreparer final : public TaskPreparer {
 public:
  CoderTaskPreparer(LoopOptions loop, harness::HarnessLocation location)
      : loop_(std::move(loop)), location_(std::move(location)) {}
  Status prepare(const std::filesystem::path& bench_dir, const BenchTask& task, int slot,
                 const ProgressSink& log) override;

 private:
  LoopOptions loop_;
  harness::HarnessLocation location_;
};

// The arguments of `judge baseline-batch` for every captured task of the bench without a record,
// timed on `track`; empty when there is none.
std::vector<std::string> baseline_batch_arguments(const std::filesystem::path& bench_dir,
                                                  const std::string& track, int jobs);

// Times the baselines (eager, torch.compile, reduce-overhead) of every captured task without a
// record in one `judge baseline-batch` on `track` into prepare/baselines (logs in prepare/).
void time_bench_baselines(const std::filesystem::path& bench_dir,
                          const harness::HarnessLocation& location, const std::string& track,
                          int jobs, const ProgressSink& progress);

}  // namespace stitch::app
