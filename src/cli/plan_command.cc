// `stitchcuda plan TASK.py|RUN_DIR|GRAPH.json`: the built-in Planner on a captured graph
// (app/plan.h) — capturing the task first when given a .py — printing the plan table; plan.json
// goes into the run directory (or --out). Exit 0 planned, 1 refused or failed, 2 bad input.
#include <fmt/format.h>

#include "app/plan.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "plan/plan_json.h"
#include "plan/plan_print.h"
#include "plan/planner.h"

namespace stitch::cli {
namespace {

struct PlanPrinting {
  bool json = false;
  bool details = false;
};

Result<CommandEnd> run_plan(const app::PlanTargetOptions& options, const PlanPrinting& printing) {
  auto capture = app::system_task_capture(options.runs_dir, print_progress);
  STITCH_ASSIGN_OR_RETURN(app::PlanTargetResult planned, app::plan_target(options, capture));
  if (printing.json) {
    fmt::print("{}", plan::serialize_plan(planned.plan));
  } else {
    fmt::print("{}", plan::format_plan(planned.plan));
    if (printing.details) fmt::print("{}", plan::format_plan_details(planned.plan));
    if (!planned.plan_path.empty()) fmt::print("plan: {}\n", planned.plan_path.string());
  }
  return CommandEnd::succeeded;
}

}  // namespace

CommandAction setup_plan(CLI::App& app) {
  auto options = std::make_shared<app::PlanTargetOptions>();
  auto printing = std::make_shared<PlanPrinting>();
  add_target_argument(app, options->target, TargetKinds::task_run_dir_or_graph);
  app.add_flag("--json", printing->json, "Print plan.json instead of the table");
  app.add_flag("--details", printing->details,
               "Also print every subtask's loads, steps and stores");
  app.add_option("--track", options->track,
                 "Precision track: fp32 (FP32-accurate GEMMs), tf32 or bf16 (every GEMM on that "
                 "tensor-core math)")
      ->capture_default_str();
  app.add_flag("--strict-fp32-gemm", options->strict_fp32_gemm,
               "Every GEMM and fused attention in strict FP32 (no split-precision 3xTF32)");
  app.add_flag("--inference", options->inference,
               "Eval semantics: BatchNorm uses its running statistics (folded into a per-channel "
               "affine at init) where the task runs in training mode; verify and run still judge "
               "against the training-mode reference");
  std::vector<std::string_view> passes;
  for (const plan::PassInfo& pass : plan::plan_passes())
    passes.push_back(pass.name);
  app.add_option("--dump-after", options->dump_after,
                 fmt::format("Print the graph (or analysis) after this pass to stderr: {}",
                             fmt::join(passes, ", ")));
  app.add_option("--out", options->out,
                 "Where to write plan.json (default: the run directory's plan.json)");
  add_runs_dir_option(app, options->runs_dir);
  app.add_option(
      "--gpu", options->gpu,
      "Plan for this GPU's spec-sheet peaks (e.g. H100); default: the local GPU, else H200");
  options->dump = [](std::string_view pass, const std::string& text) {
    fmt::print(stderr, "---- after {} ----\n{}", pass, text);
  };
  return [options, printing]() { return run_plan(*options, *printing); };
}

}  // namespace stitch::cli
