// The real side effects of the bench scheduler (bench_task.h).
#include "app/bench_task.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "app/generate.h"
#include "app/task_capture.h"
#include "plan/plan_json.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build/build_cache.h"
#include "verify/build/gpu_info.h"
#include "verify/feedback.h"
#include "verify/judge/judge_client.h"
#include "verify/verify_report.h"

namespace stitch::app {

namespace fs = std::filesystem;

bench::BenchOutcome bench_outcome(const agents::RunState& state) {
  using agents::RunEnd;
  using bench::BenchOutcome;
  if (state.end == RunEnd::succeeded) return BenchOutcome::passed;
  if (state.end != RunEnd::failed && state.end != RunEnd::none) {
    // refused, no_gpu, budget_exhausted, infrastructure_error: the bench names them as the loop
    if (auto named = bench::bench_outcome_from_name(agents::run_end_name(state.end))) return *named;
  }
  // failed: what the last verification of the whole program said; with none, the built-in
  // roles could not produce a program at all (the emitter refused every plan).
  for (auto it = state.attempts.rbegin(); it != state.attempts.rend(); ++it)
    if (it->result && it->result->outcome) return bench::bench_outcome_of(*it->result->outcome);
  return BenchOutcome::refused;
}

namespace {

bench::BenchRecord task_record(const BenchTask& task, bench::BenchOutcome outcome,
                               const std::string& reason, const std::string& run_dir,
                               const std::string& gpu, const std::string& track) {
  bench::BenchRecord record;
  record.task = task.task;
  record.level = task.level;
  record.task_file = task.file;
  record.run_dir = run_dir;
  record.outcome = outcome;
  record.reason = reason.substr(0, 300);
  record.track = track;
  record.gpu = gpu;
  record.finished_at = utc_now_iso();
  return record;
}

// The best attempt's times and the profile refine took of the first passing program.
void add_best_times(bench::BenchRecord& record, const fs::path& run_dir,
                    const agents::RunState& state) {
  const agents::AttemptRecord* best = state.best();
  if (!best || !best->result || !best->result->timing) return;
  record.ours_ms = best->result->timing->median_ms;
  record.ours_p10_ms = best->result->timing->p10_ms;
  record.ours_p90_ms = best->result->timing->p90_ms;
  for (const auto& [mode, ms] : best->result->baselines_ms)
    record.baselines.push_back({mode, ms});
  if (auto verified = read_verify_report(run_dir / best->dir / "verify.json"); verified.ok())
    record.insecure_sandbox = verified->insecure_sandbox;
  for (const auto& attempt : state.attempts)
    if (auto profile = read_profile_summary(run_dir / attempt.dir / "profile.json"); profile.ok()) {
      for (const auto& kernel : profile->kernels)
        if (record.top_kernels.size() < 6)
          record.top_kernels.push_back({kernel.name, kernel.duration_ms});
      break;
    }
}

}  // namespace

bench::BenchRecord record_for(const BenchTask& task, const fs::path& run_dir,
                              const agents::RunState& state, const std::string& gpu,
                              const std::string& track) {
  bench::BenchRecord record = task_record(task, bench_outcome(state), state.end_reason,
                                          run_dir.string(), gpu, track);
  record.attempts = state.used.attempts;
  record.wall_s = state.used.wall_s;
  record.refine_before_ms = state.refine.before_ms;
  // The plan's roofline floor (plan.json: the newest plan version), for "% of floor".
  auto plan = plan::load_plan((run_dir / "plan.json").string());
  if (plan.ok() && plan->floor_us > 0) record.floor_ms = plan->floor_us / 1000.0;
  add_best_times(record, run_dir, state);
  return record;
}

bench::BenchRecord LoopTaskRunner::run(const fs::path& bench_dir, const BenchTask& task,
                                       const ProgressSink& say) {
  std::string gpu_name;
  if (auto gpu = query_gpu(0)) gpu_name = gpu->name;
  using bench::BenchOutcome;
  auto fail = [&](BenchOutcome outcome, const std::string& reason, const std::string& run_dir) {
    bench::BenchRecord record = task_record(task, outcome, reason, run_dir, gpu_name, loop_.track);
    app::say(say, fmt::format("{} — {}", bench::bench_outcome_name(outcome), record.reason));
    return record;
  };
  bool resume = false;
  Result<run::RunDir> run = make_error("unset");
  if (auto existing = existing_run(bench_dir, task);
      existing && fs::exists(*existing / "graph.json")) {
    resume = fs::exists(*existing / "state.json");
    run = resume ? run::RunDir::open(*existing) : run::RunDir::open_or_adopt(*existing);
  } else {
    if (existing) fs::remove_all(*existing);  // an interrupted capture: start it again
    const fs::path runs = bench_dir / "runs" / task.level;
    (void)make_dirs(runs);
    SystemProcessRunner process_runner;
    harness::PythonHarness torch_harness(location_, process_runner);
    run = capture_task_into_new_run(task.file, runs, torch_harness, say);
    if (!run.ok()) return fail(BenchOutcome::refused, "capture failed: " + run.error().message, "");
  }
  if (!run.ok()) return fail(BenchOutcome::infrastructure_error, run.error().message, "");
  auto loop = loop_settings(loop_);
  if (!loop.ok())
    return fail(BenchOutcome::infrastructure_error, loop.error().message, run->root().string());
  LoopSettings settings = *loop;
  settings.worker_id = fmt::format("worker{}", worker_index_);
  settings.build_cache = default_build_cache_dir() / settings.worker_id;
  settings.export_main = false;  // bench measures; `run` makes deployable folders
  auto outcome = run_loop(*run, settings, resume, location_,
                          [&](const agents::WorkflowEvent& event) { app::say(say, event.line); });
  if (!outcome.ok())
    return fail(BenchOutcome::infrastructure_error, outcome.error().message, run->root().string());
  return record_for(task, run->root(), outcome->state, gpu_name, loop_.track);
}

Status CoderTaskPreparer::prepare(const fs::path& bench_dir, const BenchTask& task, int slot,
                                  const ProgressSink& log) {
  GenerateOptions options;
  options.target = task.file;
  options.runs_dir = (bench_dir / "runs" / task.level).string();
  options.arch = loop_.arch;
  options.track = loop_.track;
  options.strict_fp32_gemm = loop_.strict_fp32_gemm;
  // The loop's first build finds this one in worker 0's cache; each slot builds in its own
  // directory there.
  options.build_cache = default_build_cache_dir() / "worker0";
  options.worker_id = fmt::format("prepare{}", slot);
  SystemProcessRunner process_runner;
  harness::PythonHarness torch_harness(location_, process_runner);
  TaskCapture capture = [&](const fs::path& file) {
    return capture_task_into_new_run(file, options.runs_dir, torch_harness, log);
  };
  NvccCompiler compiler(process_runner);
  STITCH_ASSIGN_OR_RETURN(GenerateResult generated,
                          generate_program(options, capture, compiler));
  say(log, fmt::format("generated {} ({} subtasks)", generated.source.string(),
                       generated.subtasks));
  STITCH_ASSIGN_OR_RETURN(CompiledProgram compiled, *generated.compiled);
  say(log, fmt::format("compiled {} for {} in {:.1f} s{}", compiled.library.string(),
                       compiled.arch, compiled.seconds,
                       compiled.cache_hit ? ", from the build cache" : ""));
  return {};
}

std::vector<std::string> baseline_batch_arguments(const fs::path& bench_dir,
                                                  const std::string& track, int jobs) {
  auto tasks = read_tasks(bench_dir);
  if (!tasks.ok()) return {};
  const std::set<std::string> recorded = recorded_keys(bench_dir);
  // --info-modes '': PyTorch's default-flags eager time is information only, and would cost one
  // more pass over every task.
  std::vector<std::string> args = {"baseline-batch", "--out-dir",
                                   (bench_dir / "prepare" / "baselines").string(), "--warm-jobs",
                                   std::to_string(std::max(jobs, 1)), "--info-modes", "",
                                   "--track", track};
  const size_t fixed = args.size();
  for (const auto& task : *tasks) {
    auto run = existing_run(bench_dir, task);
    if (recorded.count(task.key()) || !run || !fs::exists(*run / "graph.json")) continue;
    args.insert(args.end(), {"--graph-dir", run->string()});
  }
  if (args.size() == fixed) return {};
  return args;
}

void time_bench_baselines(const fs::path& bench_dir, const harness::HarnessLocation& location,
                          const std::string& track, int jobs, const ProgressSink& progress) {
  if (!query_gpu(0)) return;  // without a GPU the loop stops before timing
  const std::vector<std::string> args = baseline_batch_arguments(bench_dir, track, jobs);
  if (args.empty()) return;
  const auto count = std::count(args.begin(), args.end(), "--graph-dir");
  (void)make_dirs(bench_dir / "prepare");
  const fs::path log = bench_dir / "prepare" / "baselines.log";
  say(progress, fmt::format("timing the baselines of {} tasks in one batch (log: {})", count,
                            log.string()));
  ProcessSpec spec = python_module_spec({location.python, location.python_dir},
                                        "stitch_harness.judge", args);
  spec.stdout_path = bench_dir / "prepare" / "baselines.out";
  spec.stderr_path = log;
  SystemProcessRunner runner;
  const auto started = std::chrono::steady_clock::now();
  auto result = runner.run(spec);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!result.ok())
    say(progress, fmt::format("baselines: {} (each task times its own)", result.error().message));
  else
    say(progress, fmt::format("baselines timed in {:.0f} s ({}; a task whose baselines failed "
                              "times its own)",
                              seconds, result->succeeded() ? "all modes" : result->describe()));
}

}  // namespace stitch::app
