// `stitchcuda eval-kb TASK.py SOLUTION.py`: score a KernelBench ModelNew file from another system
// with the same hardened judge (app/eval_kb.h) and print the summary. Exit 0 only when the
// solution passed; 1 otherwise; 2 bad input.
#include <fmt/format.h>

#include "app/eval_kb.h"
#include "cli/commands.h"
#include "verify/verify_report.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

void print_summary(const nlohmann::json& result, const fs::path& result_path) {
  std::string outcome = result.value("outcome", std::string("unknown"));
  std::string reason = result.value("reason", std::string());
  fmt::print("{} ({} track, {}){}\n", outcome, result.value("track", std::string("?")),
             result.value("device", std::string("?")), reason.empty() ? "" : ": " + reason);
  auto number = [&](const char* key) -> std::optional<double> {
    if (result.contains(key) && result[key].is_number()) return result[key].get<double>();
    return std::nullopt;
  };
  if (auto median = number("median_ms")) {
    std::string line = fmt::format("time: {} median", format_duration_ms(*median));
    if (auto eager = number("eager_median_ms"))
      line += fmt::format(", eager {}", format_duration_ms(*eager));
    if (auto speedup = number("speedup_vs_eager"))
      line += fmt::format(" → {:.2f}x eager", *speedup);
    fmt::print("{}\n", line);
  }
  if (result.contains("findings") && result["findings"].is_array() && !result["findings"].empty())
    fmt::print("findings: {}\n", result["findings"].size());
  fmt::print("details: {}\n", result_path.string());
}

}  // namespace

CommandAction setup_eval_kb(CLI::App& app) {
  auto options = std::make_shared<app::EvalKbOptions>();
  auto json = std::make_shared<bool>(false);
  app.add_option("task", options->task, "The KernelBench task (.py with Model)")->required();
  app.add_option("solution", options->solution, "The solution (.py with ModelNew)")->required();
  app.add_option("--track", options->track, "Precision track: fp32, tf32 or bf16")
      ->capture_default_str();
  app.add_option("--trials", options->trials, "Correctness input sets")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--iters", options->iters, "Timed iterations (0: no timing)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--device", options->device, "cuda, cuda:N or cpu")->capture_default_str();
  app.add_option("--timeout", options->timeout_s, "Seconds allowed for the solution's process")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--runs-dir", options->runs_dir, "Where run directories are created")
      ->capture_default_str();
  app.add_flag("--json", *json, "Print the result JSON instead of the summary");
  options->progress = print_progress;
  return [options, json]() -> Result<CommandEnd> {
    STITCH_ASSIGN_OR_RETURN(app::EvalKbResult evaluated, app::evaluate_kernelbench(*options));
    if (*json)
      fmt::print("{}\n", evaluated.result.dump(2));
    else
      print_summary(evaluated.result, evaluated.result_path);
    return evaluated.passed() ? CommandEnd::succeeded : CommandEnd::failed;
  };
}

}  // namespace stitch::cli
