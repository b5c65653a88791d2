// What the kernel families need of their operands, shared by the materialize pass (which inserts
// clones where a need is not met) and fusion (which builds the specs):
//   reduction  input viewed as [outer, reduce, inner]: the reduced dims one adjacent block
//   row        input viewed as [rows, cols] with unit column stride
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
