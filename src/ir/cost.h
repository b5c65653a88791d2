// First-order work estimates per node: floating-point operations and bytes moved. Used by the
// printer and as the starting point of the Planner's cost model; see cost.cc for the formulas.
#pragma once

#include "ir/ir.h"

namespace stitch::ir {

struct NodeCost {
  double flops = 0;   // multiply and add count separately (a GEMM is 2*M*N*K)
  double bytes = 0;   // tensor inputs read once + outputs written once; views move nothing
  bool known = true;  // false for ops without a formula (opaque, sort...): flops are then 0
};

// `node` must belong to `graph`, which should be verified (invalid references count as empty
// tensors rather than crashing).
NodeCost estimate_node_cost(const Graph& graph, const Node& node);

struct GraphCost {
  double flops = 0;
  double bytes = 0;
  int unknown_nodes = 0;  // nodes whose flops are not estimated
};
GraphCost estimate_graph_cost(const Graph& graph);

}  // namespace stitch::ir
