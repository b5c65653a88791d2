// `stitchcuda bench DIR...`: the loop over many tasks, one worker per GPU, into a bench directory
// (app/bench.h); `--resume` continues one, `--report` re-renders its table and report, and
// `--compare OLD [NEW]` prints what changed between two benches (bench/bench_compare.h).
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "app/bench.h"
#include "bench/bench_compare.h"
#include "bench/bench_summary.h"
#include "cli/commands.h"
#include "cli/loop_options.h"
#include "util/enum_names.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

struct BenchCommandOptions {
  app::BenchOptions bench;
  std::string report;
  std::vector<std::string> compare;  // OLD [NEW]
  double tolerance_pct = bench::kDefaultCompareTolerance * 100;
  // Internal: a worker process.
  std::string worker_of;
  int worker_index = 0;
};

Result<CommandEnd> print_reports(const fs::path& bench_dir) {
  STITCH_ASSIGN_OR_RETURN(app::BenchReports reports, app::render_bench_reports(bench_dir));
  fmt::print("{}", bench::format_table_text(reports.records));
  fmt::print("\n{} tasks{}; table: {}, report: {}\n", reports.records.size(),
             reports.skipped ? fmt::format(" ({} unreadable lines skipped)", reports.skipped) : "",
             reports.table.string(), reports.report.string());
  return CommandEnd::succeeded;
}

Result<std::vector<bench::BenchRecord>> read_bench(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(dir) / "results.jsonl", ec))
    return make_error(ErrorKind::bad_input, "{}: not a bench directory (no results.jsonl)", dir);
  return bench::read_results(fs::path(dir) / "results.jsonl");
}

std::string format_spread(const std::optional<bench::TimeSpread>& time) {
  if (!time) return bench::kMissing;
  return fmt::format("{} ({}–{})", bench::format_ms(time->median_ms), bench::format_ms(time->p10_ms),
                     bench::format_ms(time->p90_ms));
}

// What the comparison says of a task's regression, by Regression (none says nothing).
constexpr std::array<std::string_view, 3> kRegressionNotes = {
    "", "REGRESSION: no longer passes", "REGRESSION: slower beyond the spread"};
static_assert(kRegressionNotes.size() == static_cast<size_t>(bench::Regression::slower) + 1);

std::string outcome_or_absent(const std::optional<bench::BenchOutcome>& outcome) {
  return outcome ? std::string(bench::bench_outcome_name(*outcome)) : "(absent)";
}

void print_comparison(const bench::BenchComparison& comparison, const std::string& old_dir,
                      const std::string& new_dir, double tolerance_pct) {
  fmt::print("{} → {} (regression: new p10 above old p90 and the median more than {:g}% up)\n",
             old_dir, new_dir, tolerance_pct);
  fmt::print("{:<48} {:<28} {:>26} {:>26} {:>8}\n", "task", "outcome", "old ms (p10–p90)",
             "new ms (p10–p90)", "new/old");
  int changed = 0;
  for (const auto& task : comparison.tasks) {
    const std::string old_outcome = outcome_or_absent(task.old_outcome);
    const std::string new_outcome = outcome_or_absent(task.new_outcome);
    const std::string outcome =
        task.outcome_changed() ? old_outcome + " → " + new_outcome : new_outcome;
    changed += task.outcome_changed() ? 1 : 0;
    fmt::print("{:<48} {:<28} {:>26} {:>26} {:>8}  {}\n", task.key, outcome,
               format_spread(task.old_time), format_spread(task.new_time),
               task.ratio ? fmt::format("{:.3f}", *task.ratio) : bench::kMissing,
               enum_name(kRegressionNotes, task.regression));
  }
  fmt::print("\n{} tasks, {} outcome changes, {} regressions\n", comparison.tasks.size(), changed,
             comparison.regressions());
}

Result<CommandEnd> compare(const std::string& old_dir, const std::string& new_dir,
                           double tolerance_pct) {
  STITCH_ASSIGN_OR_RETURN(std::vector<bench::BenchRecord> old_records, read_bench(old_dir));
  STITCH_ASSIGN_OR_RETURN(std::vector<bench::BenchRecord> new_records, read_bench(new_dir));
  const bench::BenchComparison comparison =
      bench::compare_benches(old_records, new_records, tolerance_pct / 100);
  print_comparison(comparison, old_dir, new_dir, tolerance_pct);
  return comparison.regressions() > 0 ? CommandEnd::failed : CommandEnd::succeeded;
}

Result<CommandEnd> run_bench(const BenchCommandOptions& options) {
  if (!options.report.empty()) return print_reports(options.report);
  if (!options.worker_of.empty()) {  // a worker process
    STITCH_TRY(app::run_bench_worker(options.worker_of, options.worker_index, options.bench));
    return CommandEnd::succeeded;
  }
  const bool runs = !options.bench.dirs.empty() || !options.bench.resume.empty();
  if (options.compare.size() == 2) {
    if (runs)
      return make_error(ErrorKind::bad_input,
                        "--compare OLD NEW compares two benches; give NEW alone to compare the "
                        "bench run here");
    return compare(options.compare[0], options.compare[1], options.tolerance_pct);
  }
  if (options.compare.size() == 1 && !runs)
    return make_error(ErrorKind::bad_input,
                      "--compare OLD needs NEW_BENCH_DIR, or a bench to run (task directories or "
                      "--resume)");
  STITCH_ASSIGN_OR_RETURN(app::BenchRun run, app::run_bench(options.bench));
  STITCH_ASSIGN_OR_RETURN(CommandEnd printed, print_reports(run.bench_dir));
  if (!run.complete()) {
    fmt::print(stderr, "{} of {} tasks still to run: stitchcuda bench --resume {}\n",
               run.tasks - run.recorded, run.tasks, run.bench_dir.string());
    printed = CommandEnd::failed;
  }
  if (options.compare.size() == 1) {
    STITCH_ASSIGN_OR_RETURN(CommandEnd compared,
                            compare(options.compare[0], run.bench_dir.string(),
                                    options.tolerance_pct));
    if (compared == CommandEnd::failed) printed = CommandEnd::failed;
  }
  return printed;
}

}  // namespace

CommandAction setup_bench(CLI::App& app) {
  auto options = std::make_shared<BenchCommandOptions>();
  app::BenchOptions& bench = options->bench;
  app.description(
      "The loop over every task (.py) in the given directories (a directory's name is the task's "
      "level), one worker per GPU. Writes BENCH_DIR/results.jsonl, table.md and a self-contained "
      "report.html; resumable (--resume), re-renderable without re-running (--report).");
  app.add_option("dirs", bench.dirs, "Directories of task files (.py)");
  app.add_option("--out", bench.out, "The bench directory (default bench/<timestamp>)");
  app.add_option("--resume", bench.resume, "Continue the bench in this directory");
  app.add_option("--report", options->report, "Only re-render table.md and report.html of a bench");
  app.add_option("--compare", options->compare,
                 "OLD_BENCH_DIR [NEW_BENCH_DIR]: per-task changes from OLD to NEW (or to the "
                 "bench run here): outcome, time ratio new/old with both p10–p90 spreads. Exit 1 "
                 "when a task regressed (passed → not passed, or new p10 above old p90 with the "
                 "median up by more than --tolerance), else 0")
      ->expected(1, 2);
  app.add_option("--tolerance", options->tolerance_pct,
                 "--compare: the least slow-down of the median, in percent, counted as a "
                 "regression (run-to-run drift on one GPU is about 1%)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--gpus", bench.gpus, "Workers: a GPU count, a list (0,2,3) or all")
      ->capture_default_str();
  app.add_option("--pattern", bench.pattern, "Only task files whose name contains this");
  app.add_option("--limit", bench.limit, "At most this many tasks (first by name)");
  app.add_option("--deadline-minutes", bench.deadline_minutes,
                 "Take no new task after this many minutes (resume later)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--prepare-jobs", bench.prepare_jobs,
                 "Tasks captured and first-built in parallel before the GPU loop (default: half "
                 "the cores, at most 8, with one GPU; 0: off)")
      ->check(CLI::Range(-1, 64));
  add_loop_options(app, bench.loop);
  app.add_option("--worker-of", options->worker_of, "(internal) run as a worker of this bench")
      ->group("");
  app.add_option("--worker-index", options->worker_index, "(internal) this worker's index")
      ->group("");
  bench.progress = print_progress;
  return [options]() { return run_bench(*options); };
}

}  // namespace stitch::cli
