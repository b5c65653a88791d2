// `stitchcuda capture`: the Python harness on one task (or every task of some folders, --all)
// through app/capture.h; prints the graph (or a per-folder summary).
#include <fmt/format.h>

#include "app/capture.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "ir/print.h"
#include "util/process.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

Result<CommandEnd> capture_one(const app::CaptureOptions& options,
                               harness::TorchHarness& torch_harness) {
  STITCH_ASSIGN_OR_RETURN(app::CapturedTask captured, app::capture_task(options, torch_harness));
  fmt::print("{}", ir::format_node_table(captured.graph));
  fmt::print("\n{}\n", ir::format_graph_summary(captured.graph));
  fmt::print(stderr, "captured {} nodes in {:.1f} s → {}\n", captured.graph.nodes.size(),
             captured.seconds, (captured.run_dir / "graph.json").string());
  return CommandEnd::succeeded;
}

Result<CommandEnd> capture_all(const app::CaptureOptions& options,
                               harness::TorchHarness& torch_harness) {
  auto on_task = [](const std::string& folder, const harness::CaptureOutcome& outcome, size_t done,
                    size_t total) {
    fmt::print(stderr, "[{:>4}/{}] {}/{:<48} {:<9} {:6.1f} s  {}\n", done, total, folder,
               outcome.task, outcome.captured ? "captured" : "FAILED", outcome.seconds,
               outcome.captured
                   ? fmt::format("{} nodes", outcome.nodes)
                   : fmt::format("{}: {}", harness::capture_category_name(outcome.category),
                                 outcome.message));
  };
  STITCH_ASSIGN_OR_RETURN(app::CapturedFolders captured,
                          app::capture_folders(options, torch_harness, on_task));
  fmt::print("\n{:<24} {:>9} {:>7}\n", "folder", "captured", "failed");
  for (const auto& tally : captured.tallies)
    fmt::print("{:<24} {:>9} {:>7}\n", tally.folder, tally.captured, tally.failures.size());
  for (const auto& tally : captured.tallies)
    for (const auto& failure : tally.failures)
      fmt::print("  FAILED {}/{}: {}: {}\n", tally.folder, failure.task,
                 harness::capture_category_name(failure.category), failure.message);
  fmt::print(stderr, "details: {}\n", (captured.run_dir / "captures.json").string());
  return captured.failed() == 0 ? CommandEnd::succeeded : CommandEnd::failed;
}

}  // namespace

CommandAction setup_capture(CLI::App& app) {
  auto options = std::make_shared<app::CaptureOptions>();
  auto all = std::make_shared<bool>(false);
  app.add_option("paths", options->paths,
                 "A KernelBench-style task file (Model, get_inputs, get_init_inputs); with --all, "
                 "one or more folders of them")
      ->required();
  app.add_flag("--all", *all, "Capture every *.py task in the given folders and summarise");
  add_runs_dir_option(app, options->runs_dir);
  app.add_flag("--inference", options->inference,
               "Capture in eval mode (BatchNorm uses running statistics); default is KernelBench's "
               "training mode");
  app.add_option("--seed", options->seed, "Seed for model construction and the reference inputs")
      ->capture_default_str();
  app.add_option("--jobs", options->jobs, "Parallel captures with --all")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--timeout", options->timeout_s, "Seconds allowed per task")
      ->capture_default_str();
  options->progress = print_progress;
  return [options, all]() -> Result<CommandEnd> {
    STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
    SystemProcessRunner runner;
    harness::PythonHarness torch_harness(location, runner);
    if (*all) return capture_all(*options, torch_harness);
    if (options->paths.size() != 1)
      return make_error(ErrorKind::bad_input,
                        "capture takes one task file (use --all for folders)");
    return capture_one(*options, torch_harness);
  };
}

}  // namespace stitch::cli
