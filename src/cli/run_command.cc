// `stitchcuda run TASK.py` / `stitchcuda run --resume RUN_DIR`: the whole loop on one task
// (app/run.h) with one line per step (and, on a terminal, a live line for the verification in
// progress), then best/ with its adapters. Exit 0 when a verified program is in best/ (or, with
// no GPU here, when it was built and statically checked), 1 otherwise, 2 for bad input.
#include <unistd.h>

#include <fmt/format.h>

#include "app/run.h"
#include "cli/build_cache_option.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "cli/loop_options.h"
#include "llm/usage_ledger.h"

namespace stitch::cli {
namespace {

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

struct RunCommandOptions {
  app::RunTaskOptions run;
  BuildCacheOption build_cache;
  bool no_main = false;
};

// The LLM roles' tokens and cost per role and model (usage.json), when any role used an LLM.
void print_llm_usage(const std::filesystem::path& run_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(run_dir / "usage.json", ec)) return;
  auto report = llm::read_usage_ledger(run_dir / "usage.json");
  if (!report.ok()) return;
  for (const llm::LedgerLine& line : report->lines)
    fmt::print("llm {} ({}): {} requests, {} prompt + {} completion tokens, {}\n", line.role,
               line.model, line.requests, line.usage.prompt_tokens, line.usage.completion_tokens,
               line.cost_usd ? fmt::format("${:.4f}", *line.cost_usd) : "no price");
}

CommandEnd print_end(const app::RunTaskResult& result) {
  const app::LoopOutcome& outcome = result.outcome;
  const agents::RunState& state = outcome.state;
  if (!outcome.export_note.empty()) fmt::print(stderr, "{}\n", outcome.export_note);
  print_llm_usage(result.run_dir);
  switch (state.end) {
    case agents::RunEnd::succeeded:
      fmt::print("{}: verified program in {}\n", state.task,
                 outcome.best_dir ? outcome.best_dir->string() : result.run_dir.string());
      return outcome.best_dir ? CommandEnd::succeeded : CommandEnd::failed;
    case agents::RunEnd::no_gpu:
      fmt::print(
          "{}: no GPU here — planned, generated, built and statically checked ({}); run on "
          "a machine with a CUDA GPU to verify, time and refine it:\n  stitchcuda run "
          "--resume {}\n",
          state.task, result.run_dir.string(), result.run_dir.string());
      return CommandEnd::succeeded;
    default:
      fmt::print("{}: {} — {}\n", state.task, agents::run_end_name(state.end), state.end_reason);
      return CommandEnd::failed;
  }
}

Result<CommandEnd> run_run(RunCommandOptions& options) {
  Progress progress;
  options.run.build_cache = options.build_cache.resolved();
  options.run.export_main = !options.no_main;
  options.run.on_line = [&](const std::string& line) { progress.line(line); };
  options.run.on_status = [&](const std::string& line) { progress.status(line); };
  auto result = app::run_task(options.run);
  progress.clear();
  if (!result.ok()) return result.error();
  return print_end(*result);
}

}  // namespace

CommandAction setup_run(CLI::App& app) {
  auto options = std::make_shared<RunCommandOptions>();
  app.description(
      "The whole loop on one task: capture, plan, generate, verify, feed back, refine; the best "
      "verified program lands in RUN_DIR/best/ with a PyTorch ModelNew adapter and a standalone "
      "main. Progress: one line per step. Resumable after any interruption (--resume).");
  app.add_option("task", options->run.task, "The task: a KernelBench-style PyTorch file (.py)");
  app.add_option("--resume", options->run.resume, "Continue the run in this run directory");
  add_runs_dir_option(app, options->run.runs_dir);
  add_loop_options(app, options->run.loop);
  options->build_cache.add_to(
      app, "Build cache directory (default $STITCH_BUILD_CACHE or ~/.cache/stitchcuda/builds)",
      "Build into each attempt directory");
  app.add_flag("--no-main", options->no_main, "Do not build best/main (the standalone adapter)");
  return [options]() { return run_run(*options); };
}

}  // namespace stitch::cli
