// `plan` (plan.h).
#include "app/plan.h"

#include "app/planner_options.h"
#include "app/target.h"
#include "ir/ir.h"
#include "plan/passes.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "verify/build/gpu_info.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;


}  // namespace

Result<PlanTargetResult> plan_target(const PlanTargetOptions& options, const TaskCapture& capture) {
  TargetRules rules;
  rules.graph_file = true;
  STITCH_ASSIGN_OR_RETURN(ResolvedTarget target, resolve_target(options.target, rules, capture));
  fs::path plan_path = options.out;
  if (plan_path.empty() && target.kind != TargetKind::graph_file)
    plan_path = target.run ? target.run->path("plan.json") : fs::path(options.target) / "plan.json";
  auto graph = ir::load_graph(target.graph.string());
  if (!graph.ok()) return graph.error().with_kind(ErrorKind::bad_input);
  STITCH_ASSIGN_OR_RETURN(Track track, track_from_option(options.track));
  plan::PlanOptions plan_options = planner_options(
      {track, options.strict_fp32_gemm, options.gpu, options.inference}, options.gpu.empty() ? query_gpu(0) : std::nullopt);
  plan_options.dump_after = options.dump_after;
  plan_options.dump = options.dump;
  auto plan = plan::make_plan(*graph, plan_options);
  if (!plan.ok()) {
    if (target.run) {
      (void)target.run->events().append("plan.refused", {{"message", plan.error().message}});
      (void)target.run->set_status(run::RunStatus::failed,
                                   {{"stage", "plan"}, {"message", plan.error().message}});
    }
    return plan.error();
  }
  if (!plan_path.empty()) STITCH_TRY(plan::save_plan(*plan, plan_path.string()));
  if (target.run) {
    (void)target.run->events().append("plan.done", {{"subtasks", plan->subtasks.size()},
                                                    {"floor_us", plan->floor_us},
                                                    {"plan", plan_path.string()}});
    (void)target.run->set_status(run::RunStatus::complete, {{"stage", "plan"}});
  }
  return PlanTargetResult{std::move(*plan), plan_path};
}

}  // namespace stitch::app
