// `stitchcuda run TASK.py` / `stitchcuda run --resume RUN_DIR`: the whole loop on one task —
// capture, plan, code, verify, feedback, refine — with one line per step (and, on a terminal, a
// live line for the verification in progress), then best/ with its adapters. Exit 0 when a
// verified program is in best/ (or, with no GPU here, when it was built and statically checked),
// 1 otherwise, 2 for bad input.
#include <unistd.h>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/loop_session.h"
#include "cli/task_capture.h"
#include "verify/build_cache.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

struct RunCommandOptions {
  std::string task;
  std::string resume;
  std::string runs_dir = "runs";
  std::string track = "fp32";
  std::string arch;
  int max_attempts = 24;
  double max_minutes = 60;
  int max_replans = 3;
  int refine_attempts = 8;
  bool no_refine = false;
  bool strict_fp32_gemm = false;
  int sets = 3;
  int iters = 50;
  double timeout_s = 120;
  std::string build_cache;
  bool no_build_cache = false;
  bool no_main = false;
};

// A live line on a terminal: overwritten in place, cleared before each permanent line.
class Progress {
 public:
  Progress() : live_(::isatty(STDERR_FILENO) == 1) {}
  void line(const std::string& text) {
    clear();
    fmt::print(stderr, "{}\n", text);
  }
  void status(const std::string& text) {
    if (!live_) return;
    clear();
    shown_ = text.substr(0, 100);
    fmt::print(stderr, "  … {}", shown_);
    std::fflush(stderr);
  }
  void clear() {
    if (!live_ || shown_.empty()) return;
    fmt::print(stderr, "\r{}\r", std::string(shown_.size() + 4, ' '));
    shown_.clear();
  }

 private:
  bool live_;
  std::string shown_;
};

int run_run(const RunCommandOptions& options) {
  if (options.task.empty() == options.resume.empty()) {
    fmt::print(stderr, "error: give a task (.py) or --resume RUN_DIR, not both or neither\n");
    return kExitBadInput;
  }
  auto track = parse_track(options.track);
  if (!track) {
    fmt::print(stderr, "error: unknown track '{}' (fp32, tf32, bf16)\n", options.track);
    return kExitBadInput;
  }
  std::error_code ec;
  if (!options.task.empty() &&
      (fs::path(options.task).extension() != ".py" || !fs::is_regular_file(options.task, ec))) {
    fmt::print(stderr, "error: {}: not a task file (.py)\n", options.task);
    return kExitBadInput;
  }
  if (!options.resume.empty() &&
      !fs::is_regular_file(fs::path(options.resume) / "state.json", ec)) {
    fmt::print(stderr, "error: {}: not a run of the loop (no state.json)\n", options.resume);
    return kExitBadInput;
  }
  auto location = harness::locate_harness();
  if (!location.ok()) {
    fmt::print(stderr, "error: {}\n", location.error().message);
    return kExitFailure;
  }
  Progress progress;
  Result<run::RunDir> run = make_error("unset");
  if (options.resume.empty()) {
    bool bad_input = false;
    run = capture_task_into_new_run(options.task, options.runs_dir, *location, bad_input);
    if (!run.ok()) {
      fmt::print(stderr, "error: {}\n", run.error().message);
      return bad_input ? kExitBadInput : kExitFailure;
    }
  } else {
    run = run::RunDir::open(options.resume);
    if (!run.ok()) {
      fmt::print(stderr, "error: {}\n", run.error().message);
      return kExitBadInput;
    }
  }

  LoopSettings settings;
  settings.budgets.max_attempts = options.max_attempts;
  settings.budgets.max_wall_s = options.max_minutes * 60;
  settings.budgets.max_replans = options.max_replans;
  settings.budgets.refine = !options.no_refine;
  settings.budgets.max_refine_attempts = options.refine_attempts;
  settings.track = *track;
  settings.arch = options.arch;
  settings.strict_fp32_gemm = options.strict_fp32_gemm;
  settings.sets = options.sets;
  settings.iters = options.iters;
  settings.runner_timeout_s = options.timeout_s;
  if (!options.no_build_cache)
    settings.build_cache =
        options.build_cache.empty() ? default_build_cache_dir() : fs::path(options.build_cache);
  settings.export_main = !options.no_main;

  auto outcome = run_loop(
      *run, settings, !options.resume.empty(), *location,
      [&](const agents::WorkflowEvent& event) { progress.line(event.line); },
      [&](const std::string& step) { progress.status(step); });
  progress.clear();
  if (!outcome.ok()) {
    fmt::print(stderr, "error: {}\n", outcome.error().message);
    fmt::print(stderr, "the run can be continued: stitchcuda run --resume {}\n",
               run->root().string());
    return kExitFailure;
  }
  const agents::RunState& state = outcome->state;
  if (!outcome->export_note.empty()) fmt::print(stderr, "{}\n", outcome->export_note);
  switch (state.end) {
    case agents::RunEnd::succeeded:
      fmt::print("{}: verified program in {}\n", state.task,
                 outcome->best_dir ? outcome->best_dir->string() : run->root().string());
      return outcome->best_dir ? kExitOk : kExitFailure;
    case agents::RunEnd::no_gpu:
      fmt::print(
          "{}: no GPU here — planned, generated, built and statically checked ({}); run on "
          "a machine with a CUDA GPU to verify, time and refine it:\n  stitchcuda run "
          "--resume {}\n",
          state.task, run->root().string(), run->root().string());
      return kExitOk;
    default:
      fmt::print("{}: {} — {}\n", state.task, agents::run_end_name(state.end), state.end_reason);
      return kExitFailure;
  }
}

}  // namespace

CommandAction setup_run(CLI::App& app) {
  auto options = std::make_shared<RunCommandOptions>();
  app.description(
      "The whole loop on one task: capture, plan, generate, verify, feed back, refine; the best "
      "verified program lands in RUN_DIR/best/ with a PyTorch ModelNew adapter and a standalone "
      "main. Progress: one line per step. Resumable after any interruption (--resume).");
  app.add_option("task", options->task, "The task: a KernelBench-style PyTorch file (.py)");
  app.add_option("--resume", options->resume, "Continue the run in this run directory");
  app.add_option("--runs-dir", options->runs_dir, "Where run directories are created")
      ->capture_default_str();
  app.add_option("--track", options->track, "Precision track: fp32, tf32 or bf16")
      ->capture_default_str();
  app.add_option("--arch", options->arch, "nvcc target (default: the GPU's, else sm_90)");
  app.add_option("--max-attempts", options->max_attempts, "Verifications in all (budget)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--max-minutes", options->max_minutes, "Wall-time budget (0: none)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-replans", options->max_replans, "Plans abandoned before the run fails")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app.add_option("--refine-attempts", options->refine_attempts, "Refine candidates tried at most")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_flag("--no-refine", options->no_refine, "Stop at the first verified program");
  app.add_flag("--strict-fp32-gemm", options->strict_fp32_gemm,
               "Plan every GEMM in strict FP32 from the start (no split-precision 3xTF32)");
  app.add_option("--sets", options->sets, "Correctness input sets per verification")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--iters", options->iters, "Timed iterations per verification")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--timeout", options->timeout_s, "Seconds allowed for each runner")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option(
      "--build-cache", options->build_cache,
      "Build cache directory (default $STITCH_BUILD_CACHE or ~/.cache/stitchcuda/builds)");
  app.add_flag("--no-build-cache", options->no_build_cache, "Build into each attempt directory");
  app.add_flag("--no-main", options->no_main, "Do not build best/main (the standalone adapter)");
  return [options]() -> int { return run_run(*options); };
}

}  // namespace stitch::cli
