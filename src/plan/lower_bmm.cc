// The batch_first in-projection of nn.MultiheadAttention in pass "lower" (lowering.h): a bmm of a
// sequence-major view by one weight expanded over the batch becomes one 2-D GEMM over the rows as
// they lie in memory, its bias add folded in (lower_bmm_rows below).
#include <optional>
#include <vector>

#include "plan/access.h"
#include "plan/graph_edit.h"
#include "plan/lowering.h"
#include "plan/passes.h"

namespace stitch::plan::lowering {

namespace {

using ir::Op;

// The Access of a value of the graph built so far: views folded onto their base (a node's buffer
// is contiguous, inputs and params arrive with their strides); nullopt when a view is not
// expressible.
std::optional<Access> built_access(const ir::Graph& graph, const ir::ValueRef& ref) {
  if (ref.kind != ir::ValueRef::Kind::node) return arrival_accesses(graph).at(value_key(ref));
  const ir::Node& node = graph.nodes[ref.index];
  if (!ir::is_view(node.op)) return contiguous_access(ref, node.outputs[ref.out].shape);
  if (node.args.empty() || !node.args[0].is_ref()) return std::nullopt;
  auto input = built_access(graph, *node.args[0].ref());
  if (!input) return std::nullopt;
  auto view = view_access(graph, node, ref.out, *input);
  if (!view.ok() || !*view) return std::nullopt;
  return **view;
}

// The bmm's one use (through same-shape views) when it is `bmm + vector` (add.Tensor, no alpha)
// with a [n] vector the new graph already has: the add's node and the vector, remapped. Its GEMM
// then adds the vector as cuBLASLt's bias epilogue (addmm), the add folded in.
struct ColumnBias {
  int add = -1;
  ir::ValueRef vector;
};
std::optional<ColumnBias> column_bias_add(Lowerer& lowerer, int64_t n, ir::DType dtype) {
  const ir::Graph& source = lowerer.source();
  const Uses& uses = lowerer.uses();
  // torch's matmul views the bmm's result to the shape it has: followed.
  ir::ValueRef product = node_value(lowerer.origin_index());
  const std::vector<int64_t> shape = source.type_of(product).shape;
  while (!uses.is_graph_output(product) && uses.consumers(product).size() == 1) {
    const ir::Node& next = source.nodes[uses.consumers(product)[0]];
    if (next.op != Op::view || next.outputs.size() != 1 || next.outputs[0].shape != shape) break;
    product = node_value(uses.consumers(product)[0]);
  }
  if (uses.is_graph_output(product) || uses.consumers(product).size() != 1) return std::nullopt;
  const int add = uses.consumers(product)[0];
  const ir::Node& node = source.nodes[add];
  if (node.op != Op::add_tensor || !node.kwargs.empty() || node.args.size() != 2 ||
      !node.args[0].is_ref() || !node.args[1].is_ref() || node.outputs[0].dtype != dtype)
    return std::nullopt;
  const bool first = *node.args[0].ref() == product;
  const ir::ValueRef other = *node.args[first ? 1 : 0].ref();
  if (!first && *node.args[1].ref() != product) return std::nullopt;
  if (other == product) return std::nullopt;
  // Produced before the bmm (an input, a param or an earlier node): mapped already.
  if (other.kind == ir::ValueRef::Kind::node && other.index >= lowerer.origin_index())
    return std::nullopt;
  const ir::TensorType& type = source.type_of(other);
  if (type.shape != std::vector<int64_t>{n} || type.dtype != dtype) return std::nullopt;
  return ColumnBias{add, lowerer.rewriter().mapped(other)};
}

}  // namespace

// bmm(A [b, m, k], B [b, k, n]) with B one matrix expanded over the batch (stride 0) and A's rows
// one stride apart in (m, b) order but not in (b, m) order: nn.MultiheadAttention (batch_first)
// transposes its [batch, seq, embed] input to [seq, batch, embed] and torch's matmul runs the
// in-projection as a bmm over seq of [batch, k] rows. Lowered to one mm over the m·b rows in
// memory order (A permuted to [m, b, k], viewed [m·b, k]; B's matrix selected), its [m·b, n]
// result viewed [m, b, n] and permuted back to [b, m, n]: the same elements, one 2-D GEMM. A
// following add of a [n] vector becomes the GEMM's bias (addmm).
Result<bool> lower_bmm_rows(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const auto a = lowerer.tensor_arg(0, "self");
  const auto b = lowerer.tensor_arg(1, "mat2");
  if (!a || !b || !node.kwargs.empty()) return false;
  const ir::Graph& graph = lowerer.rewriter().graph();
  const auto a_access = built_access(graph, *a);
  const auto b_access = built_access(graph, *b);
  if (!a_access || !b_access || a_access->shape.size() != 3 || b_access->shape.size() != 3)
    return false;
  const int64_t batch = a_access->shape[0], m = a_access->shape[1], k = a_access->shape[2];
  const int64_t n = b_access->shape[2];
  const std::vector<int64_t>& sa = a_access->strides;
  const bool rows_m_major = sa[2] == 1 && sa[1] == sa[0] * batch;
  const bool rows_b_major = sa[0] == sa[1] * m;  // already one run of rows: left to the GEMM
  if (batch < 2 || m < 2 || b_access->strides[0] != 0 || !rows_m_major || rows_b_major)
    return false;
  const ir::DType dtype = node.outputs[0].dtype;
  const ir::ValueRef sequence_major =
      lowerer.emit("rows_t", Op::permute, {ref_arg(*a), int_list_arg({1, 0, 2})},
                   {contiguous_type({m, batch, k}, lowerer.type(*a).dtype)});
  const ir::ValueRef rows = lowerer.view("rows", sequence_major, {m * batch, k});
  const ir::ValueRef matrix = lowerer.emit("matrix", Op::select_int,
                                           {ref_arg(*b), ir::Arg{int64_t{0}}, ir::Arg{int64_t{0}}},
                                           {contiguous_type({k, n}, lowerer.type(*b).dtype)});
  const auto bias = column_bias_add(lowerer, n, dtype);
  const ir::TensorType product_type = contiguous_type({m * batch, n}, dtype);
  const ir::ValueRef product =
      bias ? lowerer.emit("mm", Op::addmm, {ref_arg(bias->vector), ref_arg(rows), ref_arg(matrix)},
                          {product_type})
           : lowerer.emit("mm", Op::mm, {ref_arg(rows), ref_arg(matrix)}, {product_type});
  const ir::ValueRef split = lowerer.view("split", product, {m, batch, n});
  const ir::ValueRef result =
      lowerer.emit("", Op::permute, {ref_arg(split), int_list_arg({1, 0, 2})},
                   {contiguous_type({batch, m, n}, dtype)});
  lowerer.map_output(0, result);
  if (bias) lowerer.fold_later(bias->add, 0, result);
  return true;
}


}  // namespace stitch::plan::lowering
