// Invariants every plan the Planner returns must hold; make_plan checks them last, so a planning
// bug is an error naming the subtask instead of a wrong program.
#pragma once

#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

// - every Access a subtask reads is an input, a param, or a value stored by an earlier subtask;
// - every stored value has a buffer slot, and every graph output is stored (directly or as the
//   base of a full view);
// - body operands refer to existing loads/steps (steps to earlier ones), every load has the index
//   space's element count, and steps are elementwise or creation nodes;
// - a buffer an at_init subtask writes is persistent, and arena buffers live at the same time
//   (first write to last read) share no byte.
Status check_plan(const Plan& plan);

}  // namespace stitch::plan
