// What the kernel families need of their operands, shared by the materialize pass (which inserts
// clones where a need is not met) and fusion (which builds the specs):
//   reduction  input viewed as [outer, reduce, inner]: the reduced dims one adjacent block
//   row        input viewed as [rows, cols] with unit column stride
//   scan       input viewed as [outer, length, inner] when it merges (else read in its own shape)
//   matmul     each operand a [batch, rows, cols] matrix with a unit stride in one of its two dims
#pragma once

#include <optional>
#include <vector>

#include "ir/ir.h"
#include "plan/plan.h"

namespace stitch::plan {

// The reductions fusion maps onto ReductionSpec after lowering.
bool is_primitive_reduction(ir::Op op);
ReduceOp reduce_op_of(ir::Op op);

// The normalized reduced dims of a primitive reduction node (every dim when the list is empty).
std::vector<int64_t> reduced_dims(const ir::Graph& graph, const ir::Node& node);
bool reduction_keepdim(const ir::Node& node);

struct ReduceGeometry {
  int64_t outer = 1, reduce = 1, inner = 1;
};
// nullopt when the reduced dims (size-1 dims ignored) are not one adjacent block.
std::optional<ReduceGeometry> reduce_geometry(const std::vector<int64_t>& shape,
                                              const std::vector<int64_t>& dims);
std::optional<ReduceGeometry> reduce_geometry(const ir::Graph& graph, const ir::Node& node);

// The scans fusion maps onto ScanSpec: cumsum and cumprod, along one dim.
bool is_scan(ir::Op op);
ScanOp scan_op_of(ir::Op op);
struct ScanGeometry {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t dim = 0;  // the scanned dim, wrapped
};
// The [outer, length, inner] split of a scan node's input around its dim; nullopt for other nodes
// or a dim out of range. A rank-0 input scans one element.
std::optional<ScanGeometry> scan_geometry(const ir::Graph& graph, const ir::Node& node);
// The planner's scan flags on a scan node (kwargs "reverse", "exclusive": pass "lower" sets them,
// docs/plan-format.md); absent means false.
bool scan_reverse(const ir::Node& node);
bool scan_exclusive(const ir::Node& node);

// Gathers along one dim (GatherSpec): index_select, and index.Tensor with one index tensor (on
// dim 0): y[o, j, i] = x[o, index[j], i]; torch.gather (per_element: an index of the output's
// shape, equal to x's outside `dim`): y[o, j, i] = x[o, index[o, j, i], i]. nullopt for other
// nodes, more index tensors, a torch.gather index smaller than x, or a dim out of range.
struct GatherGeometry {
  int64_t dim = 0, outer = 1, size = 1, count = 1, inner = 1;
  ir::ValueRef input, index;
  bool per_element = false;
};
std::optional<GatherGeometry> gather_geometry(const ir::Graph& graph, const ir::Node& node);

struct RowGeometry {
  int64_t rows = 1, cols = 1;
};
// softmax/log_softmax over the last dim (or a dim followed only by size-1 dims) and
// native_layer_norm; nullopt for other nodes.
std::optional<RowGeometry> row_geometry(const ir::Graph& graph, const ir::Node& node);
// The row input as [rows, cols] with unit column stride; nullopt when strides do not allow it.
std::optional<Access> row_access(const Access& input, const RowGeometry& geometry);

// A matmul operand as [batch, rows, cols] (a 2-D operand gets batch 1); nullopt when the Access has
// another rank. matrix_layout_ok: one of the two matrix dims has unit stride and the other a
// leading dimension at least as large as the unit-stride dim (size-1 dims accept any stride).
std::optional<Access> matrix_access(const Access& operand);
bool matrix_layout_ok(const Access& matrix);

}  // namespace stitch::plan
