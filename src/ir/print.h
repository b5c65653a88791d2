// Human-readable views of a graph: a per-node table (op, output type, work estimates, module
// path) and a short summary. For `stitchcuda plan --dump`, logs and error messages; not parsed.
#pragma once

#include <string>

#include "ir/ir.h"

namespace stitch::ir {

// One line per node: index, id, short op name, first output's shape and dtype ("+N" when there are
// more outputs), estimated FLOPs and bytes (cost.h), module path; then a totals line.
std::string format_node_table(const Graph& graph);

// A few lines: task, inputs, params (count and size), node count by category, ops without a
// formula or known kernel (opaque), outputs, and total estimated work.
std::string format_graph_summary(const Graph& graph);

// 1234567 -> "1.23 M"; used for FLOPs.
std::string format_count(double value);
// 1536 -> "1.50 KiB".
std::string format_bytes(double bytes);

}  // namespace stitch::ir
