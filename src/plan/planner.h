// The built-in Planner: captured graph -> Plan (plan.h), through one readable pipeline of pure
// passes (planner.cc, kPasses). Refuses, with the node and op named, a graph it cannot cover.
#pragma once

#include <span>
#include <string_view>

#include "ir/ir.h"
#include "plan/passes.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

struct PassInfo {
  std::string_view name;  // for --dump-after
  std::string_view what;
};
// The pipeline's steps in order: dead-code, shapes, coverage, recurrences, fold-batchnorm, lower,
// merge-gemms, materialize, cats, views, fuse, subtasks.
std::span<const PassInfo> plan_passes();

Result<Plan> make_plan(const ir::Graph& graph, const PlanOptions& options);

}  // namespace stitch::plan
