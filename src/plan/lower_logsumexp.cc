// logsumexp in pass "lower" (lowering.h): one reduction primitive (ReduceOp::logsumexp, computed
// in one pass by kernels/reduction.cuh), whether the capture kept torch.logsumexp whole or traced
// torch's decomposition of it,
//
//   m = amax(x, dims, keepdim=True)
//   m' = where(abs(m) == inf, 0, m)
//   add(log(sum(exp(x - m'), dims, keepdim)), m' or a view of it dropping dims)
//
// which would read x twice (the max, then the sum of exponentials). Inf and NaN behave as torch's.
#include <algorithm>
#include <limits>

#include "plan/kernel_layouts.h"
#include "plan/lowering.h"
#include "plan/op_traits.h"

namespace stitch::plan {

namespace {

using ir::Op;

// The node producing `arg`'s tensor when its op is `op`, else nullptr.
const ir::Node* producer(const ir::Graph& graph, const ir::Arg& arg, Op op, int* index = nullptr) {
  const ir::ValueRef* ref = arg.ref();
  if (ref == nullptr || ref->kind != ir::ValueRef::Kind::node) return nullptr;
  const ir::Node& node = graph.nodes[ref->index];
  if (node.op != op) return nullptr;
  if (index != nullptr) *index = ref->index;
  return &node;
}

// Output 0 of node `index` is read by `consumers` alone (each of them may read it), and is no
// graph output.
bool read_only_by(const Uses& uses, int index, const std::vector<int>& consumers) {
  const ir::ValueRef value = node_value(index);
  if (uses.is_graph_output(value)) return false;
  for (int consumer : uses.consumers(value))
    if (std::find(consumers.begin(), consumers.end(), consumer) == consumers.end()) return false;
  return true;
}

bool refers_to(const ir::Arg& arg, const ir::ValueRef& value) {
  const ir::ValueRef* ref = arg.ref();
  return ref != nullptr && *ref == value;
}

bool unscaled(const ir::Node& node) {  // add / sub without alpha, or alpha 1
  return double_arg(node, 2, "alpha", 1.0) == 1.0;
}

std::vector<int64_t> sorted_dims(const ir::Graph& graph, const ir::Node& node) {
  std::vector<int64_t> dims = reduced_dims(graph, node);
  std::sort(dims.begin(), dims.end());
  return dims;
}

// The decomposition above ending at add node `index`, log on side `side`.
std::optional<DecomposedLogsumexp> match_at(const ir::Graph& graph, const Uses& uses, int index,
                                            int side) {
  const ir::Node& add = graph.nodes[index];
  int log_at = -1, sum_at = -1, exp_at = -1, sub_at = -1, where_at = -1, eq_at = -1, abs_at = -1,
      max_at = -1;
  const ir::Node* log = producer(graph, add.args[side], Op::log, &log_at);
  if (log == nullptr || !read_only_by(uses, log_at, {index})) return std::nullopt;
  const ir::Node* sum = producer(graph, log->args[0], Op::sum_dim_intlist, &sum_at);
  if (sum == nullptr || !sum->kwargs.empty() || !read_only_by(uses, sum_at, {log_at}))
    return std::nullopt;
  const ir::Node* exp = producer(graph, sum->args[0], Op::exp, &exp_at);
  if (exp == nullptr || !read_only_by(uses, exp_at, {sum_at})) return std::nullopt;
  const ir::Node* sub = producer(graph, exp->args[0], Op::sub_tensor, &sub_at);
  if (sub == nullptr || !unscaled(*sub) || !read_only_by(uses, sub_at, {exp_at}))
    return std::nullopt;
  const ir::Node* where = producer(graph, sub->args[1], Op::where_self, &where_at);
  if (where == nullptr || where->args.size() != 3) return std::nullopt;
  const ir::Node* max = producer(graph, where->args[2], Op::amax, &max_at);
  const ir::Node* eq = producer(graph, where->args[0], Op::eq_scalar, &eq_at);
  if (max == nullptr || eq == nullptr || !reduction_keepdim(*max) || !sub->args[0].ref() ||
      !refers_to(max->args[0], *sub->args[0].ref()) ||
      double_arg(*eq, 1, "other", 0.0) != std::numeric_limits<double>::infinity())
    return std::nullopt;
  const ir::Node* abs = producer(graph, eq->args[0], Op::abs, &abs_at);
  if (abs == nullptr || !refers_to(abs->args[0], node_value(max_at))) return std::nullopt;
  // The fill where the max is infinite: 0, as a number or a constant scalar tensor.
  const ir::Arg& fill = where->args[1];
  const ir::ValueRef* fill_ref = fill.ref();
  const std::optional<double> zero = fill_ref ? (fill_ref->kind == ir::ValueRef::Kind::node
                                                     ? constant_scalar(graph.nodes[fill_ref->index])
                                                     : std::nullopt)
                                              : fill.as_double();
  if (!zero || *zero != 0.0) return std::nullopt;
  const std::vector<int64_t> dims = sorted_dims(graph, *max);
  if (dims.empty() || sorted_dims(graph, *sum) != dims) return std::nullopt;
  const bool keepdim = reduction_keepdim(*sum);
  // The max added back: where's result itself (keepdim), or a view of it shaped as the sum.
  int view_at = -1;
  const ir::ValueRef* added = add.args[1 - side].ref();
  if (!added || added->kind != ir::ValueRef::Kind::node) return std::nullopt;
  if (added->index != where_at) {
    const ir::Node& view = graph.nodes[added->index];
    if (!ir::is_view(view.op) || view.args.empty() ||
        !refers_to(view.args[0], node_value(where_at)) ||
        view.outputs[0].shape != sum->outputs[0].shape ||
        !read_only_by(uses, added->index, {index}))
      return std::nullopt;
    view_at = added->index;
  }
  if (!read_only_by(uses, where_at, {sub_at, view_at < 0 ? index : view_at}) ||
      !read_only_by(uses, eq_at, {where_at}) || !read_only_by(uses, abs_at, {eq_at}) ||
      !read_only_by(uses, max_at, {abs_at, where_at}))
    return std::nullopt;
  if (add.outputs[0].shape != sum->outputs[0].shape) return std::nullopt;  // no broadcast
  DecomposedLogsumexp match;
  match.add = index;
  match.x = *sub->args[0].ref();
  match.dims = dims;
  match.keepdim = keepdim;
  match.chain = {max_at, abs_at, eq_at, where_at, sub_at, exp_at, sum_at, log_at};
  if (view_at >= 0) match.chain.push_back(view_at);
  return match;
}

}  // namespace

std::vector<DecomposedLogsumexp> find_decomposed_logsumexps(const ir::Graph& graph,
                                                            const Uses& uses) {
  std::vector<DecomposedLogsumexp> found;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& add = graph.nodes[i];
    if (add.op != Op::add_tensor || add.args.size() < 2 || !unscaled(add)) continue;
    for (int side = 0; side < 2; ++side)
      if (auto match = match_at(graph, uses, static_cast<int>(i), side)) {
        found.push_back(std::move(*match));
        break;
      }
  }
  return found;
}

namespace lowering {

Result<bool> lower_logsumexp(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const auto dims = reduction_dims(node.arg_or_kwarg(1, "dim"), lowerer.type(x).rank());
  if (!dims) return make_error("dim out of range");
  const bool keepdim = bool_arg(node, 2, "keepdim", false);
  const ir::DType dtype = node.outputs[0].dtype;
  const ir::ValueRef cast = lowerer.cast("cast", x, dtype);
  lowerer.map_output(0, lowerer.reduce("", Op::logsumexp, cast, *dims, keepdim, dtype));
  return true;
}

Result<bool> lower_decomposed_logsumexp(Lowerer& lowerer, const DecomposedLogsumexp& match) {
  const ir::ValueRef x = lowerer.rewriter().mapped(match.x);
  lowerer.map_output(0, lowerer.reduce("", Op::logsumexp, x, match.dims, match.keepdim,
                                       lowerer.origin().outputs[0].dtype));
  return true;
}

}  // namespace lowering

}  // namespace stitch::plan
