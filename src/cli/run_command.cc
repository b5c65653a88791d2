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
  LoopCommandOptions loop;
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
  auto settings = loop_settings(options.loop);
  if (!settings.ok()) {
    fmt::print(stderr, "error: {}\n", settings.error().message);
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

  if (!options.no_build_cache)
    settings->build_cache =
        options.build_cache.empty() ? default_build_cache_dir() : fs::path(options.build_cache);
  settings->export_main = !options.no_main;

  auto outcome = run_loop(
      *run, *settings, !options.resume.empty(), *location,
      [&](const agents::WorkflowEvent& event) { progress.line(event.line); },
      [&](const std::string& step) { progress.status(step); });
  progress.clear();
  if (!outcome.ok()) {
    fmt::print(stderr, "error: {}\n", outcome.error().message);
    if (options.resume.empty())  // what went wrong is saved: the run picks up where it stopped
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
  add_loop_options(app, options->loop);
  app.add_option(
      "--build-cache", options->build_cache,
      "Build cache directory (default $STITCH_BUILD_CACHE or ~/.cache/stitchcuda/builds)");
  app.add_flag("--no-build-cache", options->no_build_cache, "Build into each attempt directory");
  app.add_flag("--no-main", options->no_main, "Do not build best/main (the standalone adapter)");
  return [options]() -> int { return run_run(*options); };
}

}  // namespace stitch::cli
