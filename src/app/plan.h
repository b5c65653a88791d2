// `plan`: the built-in Planner (plan/planner.h) on a target (target.h) — a task captured first, a
// run directory, or a graph.json — writing plan.json into the run directory (or `out`) and
// recording plan.done / plan.refused in the run's log.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "app/task_capture.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::app {

struct PlanTargetOptions {
  std::string target;
  std::string runs_dir = "runs";
  std::string out;         // plan.json here (default: the run directory's)
  std::string dump_after;  // a pass whose result `dump` receives
  std::function<void(std::string_view pass, const std::string& text)> dump;
  std::string gpu;  // plan for this GPU's peaks; empty: the local GPU's, else H200's
  std::string track = "fp32";  // the precision track whose tensor-core math the GEMMs use
  bool strict_fp32_gemm = false;
  bool inference = false;  // eval semantics (BatchNorm from running statistics)
};

struct PlanTargetResult {
  plan::Plan plan;
  std::filesystem::path plan_path;  // where plan.json was written; empty: nowhere
};

// A refused plan is a work_failed Error with the planner's message; an unknown pass, an
// unreadable graph and a bad target are bad_input.
Result<PlanTargetResult> plan_target(const PlanTargetOptions& options, const TaskCapture& capture);

}  // namespace stitch::app
