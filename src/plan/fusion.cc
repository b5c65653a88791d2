// Fusion grouping (fusion.h): the legality rules F1-F7 and the sweep that applies them.
#include "plan/fusion.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/kernel_layouts.h"
#include "plan/op_traits.h"
#include "plan/passes.h"

namespace stitch::plan {

namespace {

using ir::Op;
using ir::ValueRef;

std::optional<ValueRef> arg_ref(const ir::Node& node, size_t index) {
  if (index >= node.args.size() || !node.args[index].is_ref()) return std::nullopt;
  return *node.args[index].ref();
}

std::vector<int64_t> index_shape_of(const Group& group, const ir::Graph& graph) {
  const ir::Node& anchor = graph.nodes[group.anchor];
  if (group.kind == GroupKind::scan) {
    const auto geometry = scan_geometry(graph, anchor);
    return {geometry->outer, geometry->length, geometry->inner};
  }
  if (group.kind == GroupKind::reduction) {
    const auto geometry = reduce_geometry(graph, anchor);
    return {geometry->outer, geometry->reduce, geometry->inner};
  }
  if (group.rms_input) {
    const auto& shape = graph.type_of(*group.rms_input).shape;
    const int64_t cols = shape.empty() ? 1 : shape.back();
    return {cols == 0 ? 0 : graph.type_of(*group.rms_input).numel() / cols, cols};
  }
  const auto rows = row_geometry(graph, anchor);
  return {rows->rows, rows->cols};
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

bool uses_stay_inside(const ir::Graph& graph, const Uses& uses, const ValueRef& value,
                      const std::set<int>& members) {
  if (uses.is_graph_output(value)) return false;
  for (int consumer : uses.consumers(value)) {
    const ir::Node& node = graph.nodes[consumer];
    if (ir::is_view(node.op)) {
      if (!preserves_order(node.op)) return false;
      for (size_t out = 0; out < node.outputs.size(); ++out)
        if (!uses_stay_inside(graph, uses, node_value(consumer, static_cast<int>(out)), members))
          return false;
    } else if (!members.count(consumer)) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<int> Group::nodes() const {
  std::vector<int> all = prologue;
  if (anchor >= 0) all.push_back(anchor);
  all.insert(all.end(), library.begin(), library.end());
  all.insert(all.end(), pattern.begin(), pattern.end());
  all.insert(all.end(), body.begin(), body.end());
  std::sort(all.begin(), all.end());
  return all;
}

bool preserves_order(Op op) {
  switch (op) {
    case Op::view:
    case Op::unsafe_view:
    case Op::reshape:
    case Op::squeeze_dim:
    case Op::squeeze_dims:
    case Op::unsqueeze:
    case Op::alias:
      return true;
    default:
      return false;
  }
}

std::optional<ValueRef> through_order_preserving_views(const ir::Graph& graph, ValueRef ref) {
  while (ref.kind == ValueRef::Kind::node && ir::is_view(graph.nodes[ref.index].op)) {
    const ir::Node& node = graph.nodes[ref.index];
    if (!preserves_order(node.op)) return std::nullopt;
    ref = *node.args[0].ref();
  }
  return ref;
}

int64_t value_numel(const ir::Graph& graph, const ValueRef& ref) {
  return graph.type_of(ref).numel();
}

bool is_anchor(const ir::Graph& graph, int index) {
  const ir::Node& node = graph.nodes[index];
  if (ir::op_category(node.op) == ir::OpCategory::matmul) return true;
  if (node.op == Op::convolution) return true;
  if (ir::op_category(node.op) == ir::OpCategory::recurrent) return true;
  if (is_primitive_reduction(node.op)) return true;
  if (is_scan(node.op)) return true;
  if (gather_geometry(graph, node)) return true;
  if (node.op == Op::clone || node.op == Op::cat) return true;
  if (ir::op_category(node.op) == ir::OpCategory::pooling) return true;
  return row_geometry(graph, node).has_value();
}

bool is_foldable_constant(const ir::Graph& graph, const Uses& uses, int index) {
  const ir::Node& node = graph.nodes[index];
  if (!constant_scalar(node)) return false;
  const ValueRef value = node_value(index);
  if (uses.is_graph_output(value) || uses.consumers(value).empty()) return false;
  for (int consumer : uses.consumers(value)) {
    const ir::Node& user = graph.nodes[consumer];
    if (!is_elementwise(user.op)) return false;
    for (const auto& [name, arg] : user.kwargs)
      if (arg.is_ref()) return false;
    for (size_t a = 0; a < user.args.size(); ++a)
      if (user.args[a].is_ref() && *user.args[a].ref() == value &&
          static_cast<int>(a) >= operand_count(user.op))
        return false;
  }
  return true;
}

bool can_join_prologue(const ir::Graph& graph, const Uses& uses, const ValueMap& values, int index,
                       const std::set<int>& members, const std::vector<int64_t>& index_shape) {
  const ir::Node& node = graph.nodes[index];
  if (!is_elementwise(node.op) || node.outputs.size() != 1) return false;
  int64_t numel = 1;
  for (int64_t size : index_shape)
    numel *= size;
  if (node.outputs[0].numel() != numel) return false;
  if (!uses_stay_inside(graph, uses, node_value(index), members)) return false;
  for (const auto& [name, arg] : node.kwargs)
    if (arg.is_ref()) return false;
  for (size_t a = 0; a < node.args.size(); ++a) {
    const ir::Arg& arg = node.args[a];
    if (!arg.is_ref()) continue;
    if (static_cast<int>(a) >= operand_count(node.op)) return false;
    if (!broadcast_access(values.at(value_key(*arg.ref())), node.outputs[0].shape)) return false;
  }
  return true;
}

bool prologue_has_input(const ir::Graph& graph, const ValueMap& values,
                        const std::vector<int>& prologue, const std::vector<int64_t>& index_shape) {
  for (int index : prologue) {
    const ir::Node& node = graph.nodes[index];
    for (int a = 0; a < operand_count(node.op) && a < static_cast<int>(node.args.size()); ++a) {
      if (!node.args[a].is_ref()) continue;
      auto full =
          broadcast_access(values.at(value_key(*node.args[a].ref())), node.outputs[0].shape);
      if (full && reshape_access(*full, index_shape)) return true;
    }
  }
  return false;
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

bool must_store(const ir::Graph& graph, const Uses& uses, const ValueRef& value,
                const std::set<int>& members) {
  if (uses.reaches_output(value)) return true;
  for (int consumer : uses.real_consumers(value))
    if (!members.count(consumer)) return true;
  return false;
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

// ---- The sweep
// -----------------------------------------------------------------------------------

namespace {

class Fuser {
 public:
  Fuser(const ir::Graph& graph, const ValueMap& values, bool keep_uncovered)
      : graph_(graph),
        values_(values),
        keep_uncovered_(keep_uncovered),
        uses_(graph),
        owner_(graph.nodes.size(), -1),
        claimed_by_(graph.nodes.size(), -1) {}

  Fusion run() {
    const int n = static_cast<int>(graph_.nodes.size());
    for (int i = 0; i < n; ++i)
      if (is_foldable_constant(graph_, uses_, i)) fusion_.folded_constants.insert(i);
    for (int i = 0; i < n; ++i)  // a zero pad folded into a convolution's padding
      if (graph_.nodes[i].op == Op::convolution)
        if (auto pad = foldable_pad(graph_, uses_, i)) claimed_by_[*pad] = i;
    match_patterns();
    for (int i = 0; i < n; ++i)
      if (!pending_.count(i) && claimed_by_[i] < 0 && !opaque(i) && is_anchor(graph_, i) &&
          (is_primitive_reduction(graph_.nodes[i].op) || is_scan(graph_.nodes[i].op) ||
           row_geometry(graph_, graph_.nodes[i]))) {
        Group group;
        group.kind = is_primitive_reduction(graph_.nodes[i].op) ? GroupKind::reduction
                     : is_scan(graph_.nodes[i].op)              ? GroupKind::scan
                                                                : GroupKind::row;
        group.anchor = i;
        if (group.kind == GroupKind::row)
          group.row_op = graph_.nodes[i].op == Op::softmax       ? RowOp::softmax
                         : graph_.nodes[i].op == Op::log_softmax ? RowOp::log_softmax
                                                                 : RowOp::layer_norm;
        claimed_by_[i] = i;
        pending_[i] = group;
      }
    for (auto& [anchor, group] : pending_)
      if (group.kind != GroupKind::attention) claim_prologue(group);
    for (int i = 0; i < n; ++i)
      sweep(i);
    return std::move(fusion_);
  }

 private:
  bool opaque(int i) const {
    return keep_uncovered_ && !uncovered_reason(graph_, graph_.nodes[i]).empty();
  }

  void match_patterns() {
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (claimed_by_[i] >= 0 || opaque(i)) continue;
      auto match = match_attention(graph_, uses_, values_, i);
      if (!match) continue;
      Group group;
      group.kind = GroupKind::attention;
      group.anchor = i;
      group.pattern = match->pattern;
      group.prologue = match->scores;
      std::vector<int> members = group.nodes();
      if (std::any_of(members.begin(), members.end(), [&](int n) { return claimed_by_[n] >= 0; }))
        continue;
      for (int node : members)
        claimed_by_[node] = i;
      group.attention = std::move(*match);
      pending_[i] = std::move(group);
    }
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (claimed_by_[i] >= 0) continue;
      auto group = match_rms_norm(graph_, uses_, values_, i);
      if (!group) continue;
      bool free = claimed_by_[group->anchor] < 0;
      for (int node : group->pattern)
        free = free && claimed_by_[node] < 0;
      if (!free) continue;
      claimed_by_[group->anchor] = group->anchor;
      for (int node : group->pattern)
        claimed_by_[node] = group->anchor;
      pending_[group->anchor] = *group;
    }
  }

  void claim_prologue(Group& group) {
    const std::vector<int64_t> index_shape = index_shape_of(group, graph_);
    std::set<int> members(group.pattern.begin(), group.pattern.end());
    members.insert(group.anchor);
    std::priority_queue<int> candidates;
    auto push_producer = [&](const ir::Arg& arg) {
      if (!arg.is_ref()) return;
      auto root = through_order_preserving_views(graph_, *arg.ref());
      if (root && root->kind == ValueRef::Kind::node) candidates.push(root->index);
    };
    if (group.rms_input)
      push_producer(ir::Arg{*group.rms_input});
    else
      push_producer(graph_.nodes[group.anchor].args.at(0));
    while (!candidates.empty()) {
      const int candidate = candidates.top();
      candidates.pop();
      if (members.count(candidate) || claimed_by_[candidate] >= 0 ||
          fusion_.folded_constants.count(candidate))
        continue;
      if (!can_join_prologue(graph_, uses_, values_, candidate, members, index_shape)) continue;
      members.insert(candidate);
      group.prologue.push_back(candidate);
      claimed_by_[candidate] = group.anchor;
      const ir::Node& node = graph_.nodes[candidate];
      for (int a = 0; a < operand_count(node.op) && a < static_cast<int>(node.args.size()); ++a)
        push_producer(node.args[a]);
    }
    std::sort(group.prologue.begin(), group.prologue.end());
    // The kernel iterates one load in the index space's own shape; without one, no prologue.
    if (!group.prologue.empty() &&
        !prologue_has_input(graph_, values_, group.prologue, index_shape)) {
      for (int node : group.prologue)
        claimed_by_[node] = -1;
      group.prologue.clear();
    }
  }

  void sweep(int i) {
    const ir::Node& node = graph_.nodes[i];
    if (owner_[i] >= 0 || fusion_.folded_constants.count(i) || ir::is_view(node.op)) return;
    if (claimed_by_[i] >= 0 && claimed_by_[i] != i) return;  // created at its anchor
    Group group;
    if (auto it = pending_.find(i); it != pending_.end()) {
      group = it->second;
    } else if (opaque(i)) {
      group.kind = GroupKind::opaque;
      group.anchor = i;
    } else if (is_anchor(graph_, i)) {
      group.anchor = i;
      group.kind = ir::op_category(node.op) == ir::OpCategory::matmul      ? GroupKind::matmul
                   : ir::op_category(node.op) == ir::OpCategory::pooling   ? GroupKind::pool
                   : node.op == Op::convolution                            ? GroupKind::conv
                   : gather_geometry(graph_, node)                         ? GroupKind::gather
                   : ir::op_category(node.op) == ir::OpCategory::recurrent ? GroupKind::recurrent
                                                                           : GroupKind::copy;
      if (group.kind == GroupKind::conv)
        if (auto pad = foldable_pad(graph_, uses_, i); pad && claimed_by_[*pad] == i)
          group.pattern = {*pad};
      if (group.kind == GroupKind::matmul) {
        std::set<int> taken;
        for (size_t n = 0; n < claimed_by_.size(); ++n)
          if (claimed_by_[n] >= 0 || owner_[n] >= 0) taken.insert(static_cast<int>(n));
        fold_library_epilogue(graph_, uses_, values_, i, group, taken);
      }
    } else {
      group.kind = GroupKind::elementwise;
      group.body = {i};
    }
    const int index = static_cast<int>(fusion_.groups.size());
    for (int member : group.nodes())
      owner_[member] = index;
    if (group.kind != GroupKind::copy && group.kind != GroupKind::opaque &&
        group.kind != GroupKind::attention && group.kind != GroupKind::gather &&
        group.kind != GroupKind::recurrent)
      extend(group, index);
    fusion_.groups.push_back(std::move(group));
  }

  // F4: appends later elementwise nodes that read the group's values.
  void extend(Group& group, int index) {
    std::set<std::string> group_values, loads;
    int64_t numel = 0;
    if (group.kind == GroupKind::elementwise) {
      group_values.insert(value_key(node_value(group.body[0])));
      numel = graph_.nodes[group.body[0]].outputs[0].numel();
      note_loads(group.body[0], loads);
    } else {
      const int result = group.library.empty() ? group.anchor : group.library.back();
      const ir::Node& node = graph_.nodes[result];
      for (size_t out = 0; out < node.outputs.size(); ++out)
        group_values.insert(value_key(node_value(result, static_cast<int>(out))));
      numel = node.outputs[0].numel();
    }
    // Elementwise kernels and GEMM epilogues index every operand by one shape (launch_elementwise):
    // a load that cannot be expressed in it keeps the node out.
    std::optional<std::vector<int64_t>> index_shape;
    if (group.kind == GroupKind::elementwise)
      index_shape = graph_.nodes[group.body[0]].outputs[0].shape;
    else if (group.kind == GroupKind::matmul || group.kind == GroupKind::conv ||
             group.kind == GroupKind::scan)
      index_shape = graph_.nodes[group.anchor].outputs[0].shape;
    const int start = group.nodes().back() + 1;
    for (int j = start; j < static_cast<int>(graph_.nodes.size()); ++j) {
      const ir::Node& node = graph_.nodes[j];
      if (owner_[j] >= 0 || claimed_by_[j] >= 0 || fusion_.folded_constants.count(j)) continue;
      if (!is_elementwise(node.op) || node.outputs.size() != 1 || node.outputs[0].numel() != numel)
        continue;
      bool reads_group = false, shares_load = false, ok = true;
      for (const auto& [name, arg] : node.kwargs)
        ok = ok && !arg.is_ref();
      for (size_t a = 0; ok && a < node.args.size(); ++a) {
        const ir::Arg& arg = node.args[a];
        if (!arg.is_ref()) continue;
        if (static_cast<int>(a) >= operand_count(node.op)) {
          ok = false;
          break;
        }
        const ValueRef ref = *arg.ref();
        if (ref.kind == ValueRef::Kind::node && fusion_.folded_constants.count(ref.index)) continue;
        auto root = through_order_preserving_views(graph_, ref);
        if (root && group_values.count(value_key(*root))) {
          reads_group = true;
          continue;
        }
        const Access& access = values_.at(value_key(ref));
        if (index_shape) {
          auto full = broadcast_access(access, node.outputs[0].shape);
          if (!full || !reshape_access(*full, *index_shape)) ok = false;
        }
        const ValueRef base = access.base;
        if (base.kind == ValueRef::Kind::node) {
          const int owner = owner_[base.index];
          if (owner < 0 || owner >= index) ok = false;  // later group, or a reordering view
        }
        shares_load = shares_load || loads.count(value_key(base));
      }
      if (!ok || !(reads_group || (group.kind == GroupKind::elementwise && shares_load))) continue;
      group.body.push_back(j);
      owner_[j] = index;
      group_values.insert(value_key(node_value(j)));
      note_loads(j, loads);
    }
  }

  void note_loads(int index, std::set<std::string>& loads) const {
    const ir::Node& node = graph_.nodes[index];
    for (int a = 0; a < operand_count(node.op) && a < static_cast<int>(node.args.size()); ++a)
      if (node.args[a].is_ref())
        loads.insert(value_key(values_.at(value_key(*node.args[a].ref())).base));
  }

  const ir::Graph& graph_;
  const ValueMap& values_;
  bool keep_uncovered_ = false;
  Uses uses_;
  std::vector<int> owner_;       // group index, -1 unassigned
  std::vector<int> claimed_by_;  // anchor of the pending group holding the node, -1 none
  std::map<int, Group> pending_;
  Fusion fusion_;
};

}  // namespace

Fusion fuse(const ir::Graph& graph, const ValueMap& values, bool keep_uncovered) {
  return Fuser(graph, values, keep_uncovered).run();
}

}  // namespace stitch::plan
