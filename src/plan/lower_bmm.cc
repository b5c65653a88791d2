// GEMM row orders in pass "lower" (lowering.h). The batch_first in-projection of
// nn.MultiheadAttention: a bmm of a sequence-major view by one weight expanded over the batch
// becomes one 2-D GEMM over the rows as they lie in memory, its bias add folded in
// (lower_bmm_rows). Its out-projection: a GEMM whose rows are permuted back afterwards runs on
// rows in the order the permute wants, so no permute follows it (lower_gemm_row_order).
#include <algorithm>
#include <numeric>
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

namespace {

// The finest shape both `a` and `b` (the same element count) are splits of, in row-major order:
// [96, 32, 16] and [96, 4, 128] give [96, 4, 8, 16]. nullopt when a dim of one straddles a dim
// boundary of the other unevenly ([6, 4] and [4, 6]).
std::optional<std::vector<int64_t>> common_split(const std::vector<int64_t>& a,
                                                 const std::vector<int64_t>& b) {
  auto cuts = [](const std::vector<int64_t>& shape) {
    std::vector<int64_t> prefix;
    int64_t product = 1;
    for (int64_t size : shape)
      if (size != 1) prefix.push_back(product *= size);
    return prefix;
  };
  std::vector<int64_t> all = cuts(a), other = cuts(b);
  if ((all.empty() ? 1 : all.back()) != (other.empty() ? 1 : other.back())) return std::nullopt;
  all.insert(all.end(), other.begin(), other.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  std::vector<int64_t> split;
  int64_t previous = 1;
  for (int64_t cut : all) {
    if (cut % previous != 0) return std::nullopt;
    split.push_back(cut / previous);
    previous = cut;
  }
  return split;
}

// The permute that consumes a GEMM's [m, n] product through a view splitting m into row dims:
// the view's row dims and the permute's order of them (the column dim stays last).
struct RowPermute {
  int view = -1, permute = -1;
  std::vector<int64_t> rows;   // the view's split of m
  std::vector<int64_t> order;  // the permute's dims over `rows` (not the identity)
};
std::optional<RowPermute> row_permute_after(const ir::Graph& source, const Uses& uses,
                                            const ir::ValueRef& product) {
  auto single_consumer = [&](const ir::ValueRef& value) -> int {
    if (uses.is_graph_output(value) || uses.consumers(value).size() != 1) return -1;
    return uses.consumers(value)[0];
  };
  RowPermute found;
  found.view = single_consumer(product);
  if (found.view < 0 || source.nodes[found.view].op != Op::view) return std::nullopt;
  const std::vector<int64_t>& split = source.nodes[found.view].outputs[0].shape;
  const int64_t n = source.type_of(product).shape[1];
  if (split.size() < 3 || split.back() != n) return std::nullopt;
  found.permute = single_consumer(node_value(found.view));
  if (found.permute < 0) return std::nullopt;
  const ir::Node& permute = source.nodes[found.permute];
  const auto dims = permute.args.size() == 2 ? permute.args[1].as_int_list() : std::nullopt;
  if (permute.op != Op::permute || !dims || dims->size() != split.size()) return std::nullopt;
  const auto rank = static_cast<int64_t>(split.size());
  for (int64_t dim : *dims) {
    const auto wrapped = wrap_dim(dim, rank);
    if (!wrapped) return std::nullopt;
    found.order.push_back(*wrapped);
  }
  if (found.order.back() != rank - 1) return std::nullopt;
  found.order.pop_back();
  found.rows.assign(split.begin(), split.end() - 1);
  std::vector<int64_t> identity(found.order.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (found.order == identity) return std::nullopt;
  return found;
}

}  // namespace

// mm / addmm (no bias, or a [n] / [1, n] bias broadcast over the rows) whose [m, n] product is
// only viewed [r0, ..., rj, n] and permuted over the r dims, n kept last: nn.MultiheadAttention's
// out-projection over [seq·batch] rows, permuted back to batch-first. Row i of a GEMM's product
// depends on row i of A only, so the GEMM runs on A's rows in the permute's order instead: A's
// source split finely enough that every row dim is whole ([seq, batch·heads, dim] viewed [seq,
// batch, heads, dim]), permuted, viewed [m, k]; the product viewed in the permute's shape is then
// the permute's result. Only where A is a view the strides cannot express anyway (materialize
// copies A's source either way): the copy changes order, the permute after the GEMM goes away,
// and the copy can often be folded into its producer's store (copy_folding.h).
Result<bool> lower_gemm_row_order(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const bool addmm = node.op == Op::addmm;
  const size_t a_index = addmm ? 1 : 0;
  if (node.op != Op::mm && !addmm) return false;
  if (node.args.size() <= a_index + 1 || !node.args[a_index].is_ref()) return false;
  const std::vector<int64_t>& out = node.outputs[0].shape;
  if (out.size() != 2) return false;
  if (addmm) {
    const auto bias = lowerer.tensor_arg(0, "self");
    if (!bias) return false;
    const std::vector<int64_t>& shape = lowerer.type(*bias).shape;
    if (shape != std::vector<int64_t>{out[1]} && shape != std::vector<int64_t>{1, out[1]})
      return false;
  }
  const ir::Graph& source = lowerer.source();
  const auto after = row_permute_after(source, lowerer.uses(), node_value(lowerer.origin_index()));
  // A = view(y, [m, k]), y's strides unable to show [m, k].
  const ir::ValueRef a = *node.args[a_index].ref();
  if (!after || a.kind != ir::ValueRef::Kind::node || source.nodes[a.index].op != Op::view ||
      source.nodes[a.index].args.empty() || !source.nodes[a.index].args[0].is_ref())
    return false;
  const ir::ValueRef y = lowerer.rewriter().mapped(*source.nodes[a.index].args[0].ref());
  const int64_t m = out[0], k = source.type_of(a).shape[1];
  const auto y_access = built_access(lowerer.rewriter().graph(), y);
  if (!y_access || reshape_access(*y_access, {m, k})) return false;
  std::vector<int64_t> rows_and_k = after->rows;
  rows_and_k.push_back(k);
  const auto split = common_split(lowerer.type(y).shape, rows_and_k);
  if (!split) return false;
  // Which dims of `split` make up each row dim; the rest are columns.
  std::vector<std::vector<int64_t>> groups(after->rows.size());
  size_t next = 0;
  for (size_t r = 0; r < after->rows.size(); ++r)
    for (int64_t size = 1; size < after->rows[r] && next < split->size();)
      size *= (*split)[next], groups[r].push_back(static_cast<int64_t>(next++));
  std::vector<int64_t> order, ordered_shape;
  for (int64_t r : after->order)
    order.insert(order.end(), groups[r].begin(), groups[r].end());
  for (size_t d = next; d < split->size(); ++d)
    order.push_back(static_cast<int64_t>(d));
  for (int64_t d : order)
    ordered_shape.push_back((*split)[d]);
  const ir::DType dtype = lowerer.type(y).dtype;
  const ir::ValueRef fine = lowerer.view("rows_split", y, *split);
  const ir::ValueRef reordered =
      lowerer.emit("rows_order", Op::permute, {ref_arg(fine), int_list_arg(order)},
                   {contiguous_type(ordered_shape, dtype)});
  ir::Node gemm = lowerer.rewriter().copy_node(lowerer.origin_index());
  gemm.args[a_index] = ref_arg(lowerer.view("rows", reordered, {m, k}));
  lowerer.rewriter().emit(lowerer.origin_index(), gemm);
  // The permute's result is the product as it lies; the view before it, that permuted back.
  const ir::ValueRef product =
      node_value(static_cast<int>(lowerer.rewriter().graph().nodes.size()) - 1);
  const ir::Node& permute = source.nodes[after->permute];
  const ir::ValueRef result = lowerer.view("ordered", product, permute.outputs[0].shape);
  std::vector<int64_t> inverse(after->order.size() + 1);
  for (size_t d = 0; d < after->order.size(); ++d)
    inverse[after->order[d]] = static_cast<int64_t>(d);
  inverse.back() = static_cast<int64_t>(after->order.size());
  const ir::ValueRef unordered =
      lowerer.emit("rows_unordered", Op::permute, {ref_arg(result), int_list_arg(inverse)},
                   {source.nodes[after->view].outputs[0]});
  lowerer.fold_later(after->view, 0, unordered);
  lowerer.fold_later(after->permute, 0, result);
  return true;
}

}  // namespace stitch::plan::lowering
