// Human-readable plans: the subtask table `stitchcuda plan` prints (kind, nodes, kernel, tunables,
// roofline floor, bound, share of the total, hotspots) and a detailed listing of every spec (loads,
// steps, stores) for --dump-after=subtasks and the golden tests.
#pragma once

#include <string>

#include "plan/plan.h"

namespace stitch::plan {

std::string format_plan(const Plan& plan);
std::string format_plan_details(const Plan& plan);
std::string_view bound_name(Bound bound);  // "memory", "compute", "latency"

}  // namespace stitch::plan
