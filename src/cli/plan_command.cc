// `stitchcuda plan TASK.py|RUN_DIR|GRAPH.json`: run the built-in Planner (plan/planner.h) on a
// captured graph — capturing the task first when given a .py — print the plan table and write
// plan.json into the run directory (or --out). Exit 0 planned, 1 refused or failed, 2 bad input.
#include <filesystem>
#include <optional>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/task_capture.h"
#include "harness/harness.h"
#include "ir/ir.h"
#include "plan/plan_json.h"
#include "plan/plan_print.h"
#include "plan/planner.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "verify/gpu_info.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

struct PlanCommandOptions {
  std::string target;
  std::string runs_dir = "runs";
  std::string out;
  std::string dump_after;
  std::string gpu;
  bool json = false;
  bool strict_fp32_gemm = false;
  bool details = false;
};

Result<run::RunDir> capture_task(const PlanCommandOptions& options, bool& bad_input) {
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  return capture_task_into_new_run(options.target, options.runs_dir, location, bad_input);
}

plan::GpuPeaks choose_peaks(const PlanCommandOptions& options) {
  if (!options.gpu.empty()) return plan::peaks_for_gpu(options.gpu);
  if (auto gpu = query_gpu(0)) return plan::peaks_for_gpu(gpu->name, gpu->sm_count);
  return plan::h200_peaks();
}

int run_plan(const PlanCommandOptions& options) {
  std::error_code ec;
  const fs::path target = options.target;
  std::optional<run::RunDir> run;
  fs::path graph_path, plan_path = options.out;
  if (fs::is_directory(target, ec)) {
    graph_path = target / "graph.json";
    if (!fs::is_regular_file(graph_path, ec)) {
      fmt::print(stderr, "error: {}: no graph.json here (not a captured run directory)\n",
                 options.target);
      return kExitBadInput;
    }
    if (auto opened = run::RunDir::open(target); opened.ok()) run.emplace(std::move(*opened));
    if (plan_path.empty()) plan_path = target / "plan.json";
  } else if (target.extension() == ".py" && fs::is_regular_file(target, ec)) {
    bool bad_input = false;
    auto captured = capture_task(options, bad_input);
    if (!captured.ok()) {
      fmt::print(stderr, "error: {}\n", captured.error().message);
      return bad_input ? kExitBadInput : kExitFailure;
    }
    run.emplace(std::move(*captured));
    graph_path = run->path("graph.json");
    if (plan_path.empty()) plan_path = run->path("plan.json");
  } else if (target.extension() == ".json" && fs::is_regular_file(target, ec)) {
    graph_path = target;
  } else {
    fmt::print(stderr, "error: {}: not a task (.py), a run directory or a graph.json\n",
               options.target);
    return kExitBadInput;
  }

  auto graph = ir::load_graph(graph_path.string());
  if (!graph.ok()) {
    fmt::print(stderr, "error: {}\n", graph.error().message);
    return kExitBadInput;
  }
  plan::PlanOptions plan_options;
  plan_options.peaks = choose_peaks(options);
  plan_options.dump_after = options.dump_after;
  plan_options.allow_tf32x3 = !options.strict_fp32_gemm;
  plan_options.dump = [](std::string_view pass, const std::string& text) {
    fmt::print(stderr, "---- after {} ----\n{}", pass, text);
  };
  auto plan = plan::make_plan(*graph, plan_options);
  if (!plan.ok()) {
    if (run) {
      (void)run->events().append("plan.refused", {{"message", plan.error().message}});
      (void)run->set_status(run::RunStatus::failed,
                            {{"stage", "plan"}, {"message", plan.error().message}});
    }
    fmt::print(stderr, "error: {}\n", plan.error().message);
    return plan.error().message.starts_with("unknown pass") ? kExitBadInput : kExitFailure;
  }
  if (!plan_path.empty()) {
    if (Status saved = plan::save_plan(*plan, plan_path.string()); !saved.ok()) {
      fmt::print(stderr, "error: {}\n", saved.error().message);
      return kExitFailure;
    }
  }
  if (run) {
    (void)run->events().append("plan.done", {{"subtasks", plan->subtasks.size()},
                                             {"floor_us", plan->floor_us},
                                             {"plan", plan_path.string()}});
    (void)run->set_status(run::RunStatus::complete, {{"stage", "plan"}});
  }
  if (options.json) {
    fmt::print("{}", plan::serialize_plan(*plan));
  } else {
    fmt::print("{}", plan::format_plan(*plan));
    if (options.details) fmt::print("{}", plan::format_plan_details(*plan));
    if (!plan_path.empty()) fmt::print("plan: {}\n", plan_path.string());
  }
  return kExitOk;
}

}  // namespace

CommandAction setup_plan(CLI::App& app) {
  auto options = std::make_shared<PlanCommandOptions>();
  app.add_option("target", options->target,
                 "A task (.py, captured first), a run directory, or a graph.json")
      ->required();
  app.add_flag("--json", options->json, "Print plan.json instead of the table");
  app.add_flag("--details", options->details, "Also print every subtask's loads, steps and stores");
  app.add_flag("--strict-fp32-gemm", options->strict_fp32_gemm,
               "Every GEMM in strict FP32 (no split-precision 3xTF32)");
  app.add_option("--dump-after", options->dump_after,
                 "Print the graph (or analysis) after this pass to stderr: dead-code, shapes, "
                 "coverage, lower, materialize, views, fuse, subtasks");
  app.add_option("--out", options->out,
                 "Where to write plan.json (default: the run directory's plan.json)");
  app.add_option("--runs-dir", options->runs_dir, "Where run directories are created")
      ->capture_default_str();
  app.add_option(
      "--gpu", options->gpu,
      "Plan for this GPU's spec-sheet peaks (e.g. H100); default: the local GPU, else H200");
  return [options]() -> int { return run_plan(*options); };
}

}  // namespace stitch::cli
