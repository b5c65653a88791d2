// Turns fusion groups into subtasks: the specs of plan.h with their bodies (loads, steps, stores),
// a stable procedural id, and the nodes covered. Kernel choice and cost come after (planner.cc).
#pragma once

#include <vector>

#include "plan/fusion.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

Result<std::vector<Subtask>> build_subtasks(const ir::Graph& graph, const ValueMap& values,
                                            const Fusion& fusion);

// Every Access a subtask reads from memory (loads of its bodies, GEMM and convolution operands,
// reduction and row inputs, copy sources) and every value it stores. Register values (an anchor's
// own outputs named by epilogue loads) are left out.
std::vector<Access> subtask_reads(const Subtask& subtask);
std::vector<ir::ValueRef> subtask_writes(const Subtask& subtask);

// "matmul", "reduction", "row", "elementwise", "copy", "pool", "conv", "opaque", "scan", "gather".
std::string_view spec_kind_name(const SubtaskSpec& spec);

}  // namespace stitch::plan
