// `bench` (bench.h).
#include "app/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "app/bench_launcher.h"
#include "app/bench_scheduler.h"
#include "app/bench_task.h"
#include "bench/bench_summary.h"
#include "bench/html_report.h"
#include "harness/harness.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "verify/build/gpu_info.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;

double deadline_of(const BenchOptions& options) {
  return options.deadline_minutes > 0
             ? system_epoch_seconds() + options.deadline_minutes * 60
             : 0;
}

// The bench directory to run: a new one with its tasks.json, or the one resumed (its interrupted
// claims freed so that those tasks resume).
Result<fs::path> open_bench_dir(const BenchOptions& options) {
  if (!options.resume.empty()) {
    const fs::path bench_dir = fs::absolute(options.resume);
    if (!fs::exists(bench_dir / "tasks.json"))
      return make_error(ErrorKind::bad_input, "{}: not a bench directory (no tasks.json)",
                        options.resume);
    free_interrupted_claims(bench_dir);
    return bench_dir;
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<BenchTask> tasks,
                          collect_tasks(options.dirs, options.pattern, options.limit));
  const fs::path bench_dir = fs::absolute(
      options.out.empty()
          ? fs::path("bench") / run::format_timestamp(std::chrono::system_clock::now())
          : fs::path(options.out));
  if (fs::exists(bench_dir / "tasks.json"))
    return make_error(ErrorKind::bad_input, "{} already holds a bench; continue it with --resume",
                      bench_dir.string());
  STITCH_TRY(make_dirs(bench_dir / "claims"));
  STITCH_TRY(make_dirs(bench_dir / "runs"));
  STITCH_TRY(write_tasks(bench_dir, tasks, options.loop.track));
  return bench_dir;
}

// What every worker process is given besides its bench and index.
std::vector<std::string> worker_arguments(const BenchOptions& options) {
  std::vector<std::string> args = loop_arguments(options.loop);
  if (options.deadline_minutes > 0)
    args.insert(args.end(), {"--deadline-minutes", fmt::format("{}", options.deadline_minutes)});
  return args;
}

}  // namespace

Result<std::vector<int>> parse_gpus(const std::string& text) {
  std::vector<int> gpus;
  if (text == "all") {
    for (int device = 0; query_gpu(device); ++device)
      gpus.push_back(device);
    if (gpus.empty()) gpus.push_back(0);  // no GPU: one worker, every task ends no_gpu
    return gpus;
  }
  if (text.find(',') == std::string::npos) {
    const int count = std::atoi(text.c_str());
    if (count < 1 || count > 64)
      return make_error(ErrorKind::bad_input, "--gpus {}: a count 1..64, a list 0,1,... or all",
                        text);
    for (int device = 0; device < count; ++device)
      gpus.push_back(device);
    return gpus;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      return make_error(ErrorKind::bad_input, "--gpus {}: '{}' is not a device number", text,
                        item);
    gpus.push_back(std::stoi(item));
    start = end + 1;
  }
  return gpus;
}

// A resumed bench stays on its track, so that its baselines, programs and records agree; --track
// naming another one is refused rather than ignored.
Result<BenchOptions> options_on_bench_track(BenchOptions options, const fs::path& bench_dir) {
  STITCH_ASSIGN_OR_RETURN(BenchTaskFile file, read_task_file(bench_dir));
  if (options.loop.track == file.track) return options;
  if (options.loop.track != LoopOptions{}.track)
    return make_error(ErrorKind::bad_input, "{} runs on the {} track; --track {} cannot resume it",
                      bench_dir.string(), file.track, options.loop.track);
  say(options.progress, fmt::format("resuming on the bench's {} track", file.track));
  options.loop.track = file.track;
  return options;
}

Result<BenchRun> run_bench(const BenchOptions& given) {
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  const double deadline = deadline_of(given);
  if (given.dirs.empty() == given.resume.empty())
    return make_error(ErrorKind::bad_input,
                      "give task directories or --resume BENCH_DIR (or --report BENCH_DIR)");
  STITCH_ASSIGN_OR_RETURN(std::vector<int> gpus, parse_gpus(given.gpus));
  STITCH_TRY(loop_settings(given.loop));  // a bad track or LLM config before any work
  STITCH_ASSIGN_OR_RETURN(fs::path bench_dir, open_bench_dir(given));
  STITCH_ASSIGN_OR_RETURN(const BenchOptions options, options_on_bench_track(given, bench_dir));
  // An explicit STITCH_BASELINE_CACHE_DIR wins; workers and the harness processes inherit it.
  ::setenv("STITCH_BASELINE_CACHE_DIR", (bench_dir / "baselines").c_str(), /*overwrite=*/0);
  say(options.progress, fmt::format("bench {} on {} worker(s)", bench_dir.string(), gpus.size()));

  LoopTaskRunner runner(options.loop, 0, location);
  CoderTaskPreparer preparer(options.loop, location);
  SelfWorkerLauncher launcher(bench_dir, worker_arguments(options));
  ScheduleOptions schedule;
  schedule.gpus = gpus;
  schedule.prepare_jobs =
      options.prepare_jobs >= 0
          ? options.prepare_jobs
          : std::clamp(static_cast<int>(std::thread::hardware_concurrency()) / 2, 1, 8);
  schedule.deadline_epoch_s = deadline;
  schedule.progress = options.progress;
  ScheduleDeps deps{runner, launcher, &preparer, [&](int jobs) {
                      time_bench_baselines(bench_dir, location, options.loop.track, jobs,
                                           options.progress);
                    }};
  STITCH_ASSIGN_OR_RETURN(BenchProgress progress, schedule_bench(bench_dir, schedule, deps));
  return BenchRun{bench_dir, progress.tasks, progress.recorded};
}

Status run_bench_worker(const fs::path& bench_dir, int worker_index, const BenchOptions& options) {
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  LoopTaskRunner runner(options.loop, worker_index, location);
  work(bench_dir, runner,
       {worker_index, deadline_of(options), system_epoch_seconds, options.progress});
  return {};
}

Result<BenchReports> render_bench_reports(const fs::path& bench_dir) {
  BenchReports reports;
  STITCH_ASSIGN_OR_RETURN(reports.records,
                          bench::read_results(bench_dir / "results.jsonl", &reports.skipped));
  reports.table = bench_dir / "table.md";
  reports.report = bench_dir / "report.html";
  STITCH_TRY(write_file_atomic(reports.table, bench::format_table_markdown(reports.records)));
  bench::HtmlReportOptions html;
  html.title = "StitchCUDA bench — " + bench_dir.filename().string();
  html.generated_at = utc_now_iso();
  STITCH_TRY(write_file_atomic(reports.report, bench::render_html_report(reports.records, html)));
  return reports;
}

}  // namespace stitch::app
