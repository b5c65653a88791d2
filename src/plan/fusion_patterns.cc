// Fusion's two pattern rules on a GEMM's or a reduction's neighbourhood (fusion.h): the library
// epilogue a GEMM takes over (F5: bias, scale, ReLU / GELU, also through torch's reshape of a 3-D
// linear's product) and the rms_norm pattern a row group takes whole.
#include "plan/fusion.h"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan/access.h"
#include "plan/kernel_layouts.h"
#include "plan/op_traits.h"

namespace stitch::plan {

namespace {

using ir::Op;
using ir::ValueRef;

std::optional<ValueRef> arg_ref(const ir::Node& node, size_t index) {
  if (index >= node.args.size() || !node.args[index].is_ref()) return std::nullopt;
  return *node.args[index].ref();
}

// The single consumer of `value` that takes it directly (no view), or nullopt.
std::optional<int> single_direct_consumer(const ir::Graph& graph, const Uses& uses,
                                          const ValueRef& value) {
  if (uses.is_graph_output(value)) return std::nullopt;
  const std::vector<int>& consumers = uses.consumers(value);
  if (consumers.size() != 1 || ir::is_view(graph.nodes[consumers[0]].op)) return std::nullopt;
  return consumers[0];
}

// The other tensor operand of a binary node that takes `value` once.
std::optional<ir::Arg> other_operand(const ir::Node& node, const ValueRef& value) {
  if (node.args.size() < 2) return std::nullopt;
  const bool first = node.args[0].is_ref() && *node.args[0].ref() == value;
  const bool second = node.args[1].is_ref() && *node.args[1].ref() == value;
  if (first == second) return std::nullopt;
  return node.args[first ? 1 : 0];
}

// A [n] vector broadcast over every dim but the last of `shape`, unit stride; base an input/param.
bool is_column_vector(const ValueMap& values, const ir::Arg& arg,
                      const std::vector<int64_t>& shape) {
  if (!arg.is_ref()) return false;
  const Access& access = values.at(value_key(*arg.ref()));
  if (access.base.kind == ValueRef::Kind::node) return false;
  auto full = broadcast_access(access, shape);
  if (!full || shape.empty() || access_numel(access) != shape.back()) return false;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    if (full->strides[d] != 0 && shape[d] != 1) return false;
  return shape.back() == 1 || full->strides.back() == 1;
}

// The value's one use when it is a view with the same elements in the same order (a reshape of
// its contiguous buffer, the last dim kept), not a graph output; nullopt otherwise.
std::optional<ValueRef> reshape_of(const ir::Graph& graph, const Uses& uses, const ValueMap& values,
                                   const ValueRef& value) {
  if (uses.is_graph_output(value) || uses.consumers(value).size() != 1) return std::nullopt;
  const int view = uses.consumers(value)[0];
  if (!ir::is_view(graph.nodes[view].op) || graph.nodes[view].outputs.size() != 1)
    return std::nullopt;
  const ValueRef out = node_value(view);
  const Access& from = values.at(value_key(value));
  const Access& to = values.at(value_key(out));
  if (!from.is_contiguous() || !to.is_contiguous() || from.base != to.base ||
      from.offset != to.offset || access_numel(from) != access_numel(to) ||
      from.shape.empty() || to.shape.empty() || from.shape.back() != to.shape.back())
    return std::nullopt;
  return out;
}

}  // namespace

void fold_library_epilogue(const ir::Graph& graph, const Uses& uses, const ValueMap& values,
                           int anchor, Group& group, const std::set<int>& taken) {
  const ir::Node& gemm = graph.nodes[anchor];
  const std::vector<int64_t>& shape = gemm.outputs[0].shape;
  std::string bias, activation;
  if (gemm.op == Op::addmm || gemm.op == Op::baddbmm) {
    const ValueRef self = *arg_ref(gemm, 0);
    const auto& bias_shape = graph.type_of(self).shape;
    if (!bias_shape.empty() && bias_shape.back() == shape.back() &&
        value_numel(graph, self) == shape.back() && double_arg(gemm, 3, "beta", 1.0) == 1.0)
      bias = "bias";
  }
  ValueRef result = node_value(anchor);
  while (activation.empty()) {
    auto consumer = single_direct_consumer(graph, uses, result);
    // torch's linear on a 3-D input views the [b·s, n] product back to [b, s, n]: the same
    // elements in the same order, so an activation after that view folds in as well.
    const auto reshaped = reshape_of(graph, uses, values, result);
    if (!consumer && reshaped) {
      consumer = single_direct_consumer(graph, uses, *reshaped);
      if (consumer && graph.nodes[*consumer].op != Op::relu && graph.nodes[*consumer].op != Op::gelu)
        consumer.reset();
    }
    if (!consumer || taken.count(*consumer)) break;
    const ir::Node& node = graph.nodes[*consumer];
    const bool scalar_factor = (node.op == Op::mul_tensor || node.op == Op::div_tensor) &&
                               node.args.size() == 2 && node.args[0].is_ref() &&
                               *node.args[0].ref() == result && node.args[1].as_double() &&
                               *node.args[1].as_double() != 0;
    if (scalar_factor && bias.empty() && (gemm.op == Op::mm || gemm.op == Op::bmm)) {
      const double factor = *node.args[1].as_double();
      group.alpha *= node.op == Op::mul_tensor ? factor : 1.0 / factor;
    } else if (bias.empty() && !group.bias && node.op == Op::add_tensor &&
               double_arg(node, 2, "alpha", 1.0) == 1.0) {
      const auto other = other_operand(node, result);
      if (!other || !is_column_vector(values, *other, shape)) break;
      bias = "bias";
      group.bias = *other->ref();
    } else if (node.op == Op::relu && node.args[0].is_ref() &&
               (*node.args[0].ref() == result || *node.args[0].ref() == reshaped)) {
      activation = "relu";
    } else if (node.op == Op::gelu && node.kwarg("approximate") != nullptr &&
               node.kwarg("approximate")->as_string() != nullptr &&
               *node.kwarg("approximate")->as_string() == "tanh") {
      activation = "gelu";
    } else {
      break;
    }
    group.library.push_back(*consumer);
    result = node_value(*consumer);
  }
  if (bias.empty())
    group.library_epilogue = activation.empty() ? "none" : activation;
  else
    group.library_epilogue = activation.empty() ? bias : bias + "_" + activation;
}

std::optional<Group> match_rms_norm(const ir::Graph& graph, const Uses& uses,
                                    const ValueMap& values, int sum) {
  const ir::Node& reduce = graph.nodes[sum];
  if (reduce.op != Op::sum_dim_intlist || !reduction_keepdim(reduce)) return std::nullopt;
  const auto geometry = reduce_geometry(graph, reduce);
  if (!geometry || geometry->inner != 1) return std::nullopt;
  const ValueRef squared = *arg_ref(reduce, 0);
  if (squared.kind != ValueRef::Kind::node) return std::nullopt;
  const ir::Node& square = graph.nodes[squared.index];
  std::optional<ValueRef> x;
  if (square.op == Op::pow_tensor_scalar && double_arg(square, 1, "exponent", 0) == 2.0) {
    x = arg_ref(square, 0);
  } else if (square.op == Op::mul_tensor && arg_ref(square, 0) &&
             arg_ref(square, 0) == arg_ref(square, 1)) {
    x = arg_ref(square, 0);
  }
  if (!x || single_direct_consumer(graph, uses, squared) != sum) return std::nullopt;
  const int64_t cols = geometry->reduce;
  const auto& x_shape = graph.type_of(*x).shape;
  if (x_shape.empty() || x_shape.back() != cols) return std::nullopt;
  Group group;
  group.kind = GroupKind::row;
  group.row_op = RowOp::rms_norm;
  group.pattern = {squared.index, sum};
  // mean: / cols or * (1 / cols)
  auto mean = single_direct_consumer(graph, uses, node_value(sum));
  if (!mean) return std::nullopt;
  const ir::Node& mean_node = graph.nodes[*mean];
  const double divisor = double_arg(mean_node, 1, "other", 0);
  const bool divides = mean_node.op == Op::div_tensor && divisor == static_cast<double>(cols);
  const bool multiplies = mean_node.op == Op::mul_tensor && divisor != 0 &&
                          std::abs(divisor * static_cast<double>(cols) - 1) < 1e-12;
  if (!(divides || multiplies) || arg_ref(mean_node, 0) != node_value(sum)) return std::nullopt;
  group.pattern.push_back(*mean);
  // + eps
  auto shift = single_direct_consumer(graph, uses, node_value(*mean));
  if (!shift) return std::nullopt;
  const ir::Node& shift_node = graph.nodes[*shift];
  if ((shift_node.op != Op::add_tensor && shift_node.op != Op::add_scalar) ||
      shift_node.args.size() < 2 || !shift_node.args[1].as_double() ||
      double_arg(shift_node, 2, "alpha", 1.0) != 1.0)
    return std::nullopt;
  group.rms_eps = *shift_node.args[1].as_double();
  group.pattern.push_back(*shift);
  // rsqrt then x * r, or sqrt then x / r
  auto root = single_direct_consumer(graph, uses, node_value(*shift));
  if (!root) return std::nullopt;
  const Op root_op = graph.nodes[*root].op;
  if (root_op != Op::rsqrt && root_op != Op::sqrt) return std::nullopt;
  group.pattern.push_back(*root);
  auto scale = single_direct_consumer(graph, uses, node_value(*root));
  if (!scale) return std::nullopt;
  const ir::Node& scale_node = graph.nodes[*scale];
  const ir::Arg x_arg{*x};
  if (root_op == Op::rsqrt) {
    const auto other = other_operand(scale_node, node_value(*root));
    if (scale_node.op != Op::mul_tensor || !other || !(*other == x_arg)) return std::nullopt;
  } else if (scale_node.op != Op::div_tensor || scale_node.args.size() < 2 ||
             !(scale_node.args[0] == x_arg) || arg_ref(scale_node, 1) != node_value(*root)) {
    return std::nullopt;
  }
  if (graph.nodes[*scale].outputs[0].shape != x_shape) return std::nullopt;
  group.anchor = *scale;
  // optional * weight[cols]
  if (auto weight = single_direct_consumer(graph, uses, node_value(*scale))) {
    const ir::Node& weight_node = graph.nodes[*weight];
    const auto other = other_operand(weight_node, node_value(*scale));
    if (weight_node.op == Op::mul_tensor && other && is_column_vector(values, *other, x_shape) &&
        weight_node.outputs[0].shape == x_shape) {
      group.pattern.push_back(*scale);
      group.anchor = *weight;
      group.rms_weight = *other->ref();
    }
  }
  if (!row_access(values.at(value_key(*x)), RowGeometry{value_numel(graph, *x) / cols, cols}))
    return std::nullopt;
  group.rms_input = *x;
  return group;
}

}  // namespace stitch::plan
