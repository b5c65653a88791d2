// plan.json: the serialized Plan ("format": "stitchcuda.plan", "version": 1), documented in
// docs/plan-format.md. parse_plan(serialize_plan(p)) == p.
#pragma once

#include <string>
#include <string_view>

#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

std::string serialize_plan(const Plan& plan);
// Errors name the field: "plan.json: subtasks[2].spec.a.base: unknown node 'mm_7'".
Result<Plan> parse_plan(std::string_view text, std::string_view source_name = "plan.json");
Status save_plan(const Plan& plan, const std::string& path);  // atomic
Result<Plan> load_plan(const std::string& path);

}  // namespace stitch::plan
