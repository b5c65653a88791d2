// `stitchcuda eval-kb TASK.py SOLUTION.py`: score a KernelBench ModelNew file from another system
// with the same hardened judge (app/eval_kb.h) and print the summary. Exit 0 only when the
// solution passed; 1 otherwise; 2 bad input.
#include <fmt/format.h>

#include "app/eval_kb.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "verify/verdict.h"
#include "verify/verify_report.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

void print_summary(const harness::EvalKbReport& report, const fs::path& result_path) {
  fmt::print("{} ({} track, {}){}\n", enum_name(report.outcome), report.track, report.device,
             report.reason.empty() ? "" : ": " + report.reason);
  if (report.median_ms) {
    std::string line = fmt::format("time: {} median", format_duration_ms(*report.median_ms));
    if (report.eager_median_ms)
      line += fmt::format(", eager {}", format_duration_ms(*report.eager_median_ms));
    if (report.speedup_vs_eager) line += fmt::format(" → {:.2f}x eager", *report.speedup_vs_eager);
    fmt::print("{}\n", line);
  }
  if (report.findings > 0) fmt::print("findings: {}\n", report.findings);
  fmt::print("details: {}\n", result_path.string());
}

}  // namespace

CommandAction setup_eval_kb(CLI::App& app) {
  auto options = std::make_shared<app::EvalKbOptions>();
  auto json = std::make_shared<bool>(false);
  app.add_option("task", options->task, "The KernelBench task (.py with Model)")->required();
  app.add_option("solution", options->solution, "The solution (.py with ModelNew)")->required();
  add_track_option(app, options->judging.track);
  app.add_option("--trials", options->judging.trials, "Correctness input sets")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--iters", options->judging.iters, "Timed iterations (0: no timing)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--device", options->judging.device, "cuda, cuda:N or cpu")->capture_default_str();
  app.add_option("--timeout", options->judging.timeout_s,
                 "Seconds allowed for the solution's process")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  add_runs_dir_option(app, options->runs_dir);
  app.add_flag("--json", *json, "Print the result JSON instead of the summary");
  options->progress = print_progress;
  return [options, json]() -> Result<CommandEnd> {
    STITCH_ASSIGN_OR_RETURN(app::EvalKbResult evaluated, app::evaluate_kernelbench(*options));
    if (*json)
      fmt::print("{}\n", evaluated.report.document.dump(2));
    else
      print_summary(evaluated.report, evaluated.result_path);
    return evaluated.passed() ? CommandEnd::succeeded : CommandEnd::failed;
  };
}

}  // namespace stitch::cli
