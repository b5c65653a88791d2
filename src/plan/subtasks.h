// Turns fusion groups into subtasks: the specs of plan.h with their bodies (loads, steps, stores),
// a stable procedural id, and the nodes covered. Kernel choice and cost come after (planner.cc).
#pragma once

#include <initializer_list>
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

// Some subtask other than those at `except` reads `buffer`, or a graph output lives in it.
bool read_elsewhere(const ir::Graph& graph, const ValueMap& values,
                    const std::vector<Subtask>& subtasks, std::initializer_list<size_t> except,
                    const ir::ValueRef& buffer);
inline bool read_elsewhere(const ir::Graph& graph, const ValueMap& values,
                           const std::vector<Subtask>& subtasks, size_t except,
                           const ir::ValueRef& buffer) {
  return read_elsewhere(graph, values, subtasks, {except}, buffer);
}
// Ids stay "sNN_..." with NN the subtask's position: after subtasks are removed.
void renumber_subtask_ids(std::vector<Subtask>& subtasks);
// `value` is a node's output in a contiguous buffer of its own (not a view, not a cat's window).
bool owns_buffer(const ir::Graph& graph, const ValueMap& values, const ir::ValueRef& value);

// "matmul", "reduction", "row", "elementwise", "copy", "pool", "conv", "opaque", "scan", "gather".
std::string_view spec_kind_name(const SubtaskSpec& spec);

}  // namespace stitch::plan
