// Fusion grouping (fusion.h): the legality rules F1-F11 and the sweep that applies them; the
// library-epilogue and rms_norm patterns are in fusion_patterns.cc.
#include "plan/fusion.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/kernel_choice.h"
#include "plan/kernel_layouts.h"
#include "plan/op_traits.h"
#include "plan/passes.h"

namespace stitch::plan {

namespace {

using ir::Op;
using ir::ValueRef;

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
  if (group.kind == GroupKind::conv) return conv_input_space(*conv_geometry(graph, anchor));
  if (group.rms_input) {
    const auto& shape = graph.type_of(*group.rms_input).shape;
    const int64_t cols = shape.empty() ? 1 : shape.back();
    return {cols == 0 ? 0 : graph.type_of(*group.rms_input).numel() / cols, cols};
  }
  const auto rows = row_geometry(graph, anchor);
  return {rows->rows, rows->cols};
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

bool conv_prologue_fits(const ir::Graph& graph, const ValueMap& values,
                        const std::vector<int>& prologue, const std::vector<int64_t>& index_shape,
                        bool image_windows) {
  const std::set<int> members(prologue.begin(), prologue.end());
  std::optional<Access> input;
  for (int index : prologue) {
    const ir::Node& node = graph.nodes[index];
    for (int a = 0; a < operand_count(node.op) && a < static_cast<int>(node.args.size()); ++a) {
      const ValueRef* ref = node.args[a].ref();
      if (!ref) continue;
      if (auto root = through_order_preserving_views(graph, *ref);
          root && root->kind == ValueRef::Kind::node && members.count(root->index))
        continue;  // a step of the prologue
      auto full = broadcast_access(values.at(value_key(*ref)), node.outputs[0].shape);
      auto load = full ? reshape_access(*full, index_shape) : std::nullopt;
      if (!load) return false;
      if (per_plane(*load, index_shape)) continue;
      // The kernel reads its input as contiguous float32 (or, image_windows, each image so).
      if (!(image_windows ? is_dense_per_image(*load) : load->is_contiguous()) ||
          graph.type_of(*ref).dtype != ir::DType::float32 || (input && *input != *load))
        return false;
      input = *load;
    }
  }
  return input.has_value();
}

bool is_detached_scalar(const ir::Graph& graph, const Uses& uses, int index) {
  const ir::Node& node = graph.nodes[index];
  if (!is_elementwise(node.op) || node.outputs.size() != 1 || node.outputs[0].numel() != 1)
    return false;
  const ValueRef value = node_value(index);
  if (!uses.real_consumers(value).empty() || !uses.reaches_output(value)) return false;
  for (const auto& [name, arg] : node.kwargs)
    if (arg.is_ref()) return false;
  for (size_t a = 0; a < node.args.size(); ++a) {
    const ValueRef* ref = node.args[a].ref();
    if (!ref) continue;
    if (static_cast<int>(a) >= operand_count(node.op)) return false;
    if (ref->kind == ValueRef::Kind::node && !is_foldable_constant(graph, uses, ref->index))
      return false;
  }
  return true;
}

bool must_store(const ir::Graph& graph, const Uses& uses, const ValueRef& value,
                const std::set<int>& members) {
  if (uses.reaches_output(value)) return true;
  for (int consumer : uses.real_consumers(value))
    if (!members.count(consumer)) return true;
  return false;
}

// ---- The sweep
// -----------------------------------------------------------------------------------

namespace {

class Fuser {
 public:
  Fuser(const ir::Graph& graph, const ValueMap& values, bool keep_uncovered,
        const ConvPrologueRule& conv_takes_prologue)
      : graph_(graph),
        values_(values),
        keep_uncovered_(keep_uncovered),
        conv_takes_prologue_(conv_takes_prologue),
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
    claim_conv_prologues();
    claim_detached_scalars();
    for (int i = 0; i < n; ++i)
      sweep(i);
    sink_elementwise_groups(graph_, uses_, fusion_.groups);
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

  // image_windows: a convolution's kernel reads the prologue's input dense per image
  // (conv_prologue_fits).
  void claim_prologue(Group& group, bool image_windows = false) {
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
    // The kernel iterates one load in the index space's own shape; without one, no prologue. A
    // convolution's kernel reads that one and otherwise only per-plane values (F10).
    const bool fits =
        group.kind == GroupKind::conv
            ? conv_prologue_fits(graph_, values_, group.prologue, index_shape, image_windows)
            : prologue_has_input(graph_, values_, group.prologue, index_shape);
    if (!group.prologue.empty() && !fits) {
      for (int node : group.prologue)
        claimed_by_[node] = -1;
      group.prologue.clear();
    }
  }

  // F10: a convolution whose kernel applies an input transform takes the elementwise chain that
  // produces its input as a prologue (conv_prologue_fits); it is created at its anchor like a
  // reduction.
  void claim_conv_prologues() {
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (graph_.nodes[i].op != Op::convolution || claimed_by_[i] >= 0 || opaque(i)) continue;
      const auto pad = foldable_pad(graph_, uses_, i);
      if (pad && claimed_by_[*pad] != i) continue;
      auto spec = conv_spec(graph_, values_, i, pad);
      if (!spec.ok() ||
          !(conv_takes_prologue_ ? conv_takes_prologue_(*spec) : depthwise_conv_eligible(*spec)))
        continue;
      Group group;
      group.kind = GroupKind::conv;
      group.anchor = i;
      if (pad) group.pattern = {*pad};
      claimed_by_[i] = i;
      // The implicit GEMM's copy of x reads a window of whole channels too; the depthwise
      // kernel reads x dense.
      const bool depthwise = depthwise_conv_eligible(*spec);
      claim_prologue(group, !depthwise);
      if (!depthwise && !group.prologue.empty() && !prologue_input_stored_anyway(group)) {
        for (int node : group.prologue)
          claimed_by_[node] = -1;
        group.prologue.clear();
      }
      if (group.prologue.empty()) {
        claimed_by_[i] = -1;  // the sweep creates it as usual
        continue;
      }
      pending_[i] = std::move(group);
    }
  }

  // The implicit GEMM takes a prologue only where its input is stored anyway (an input or param,
  // or a value another group reads too, as a BatchNorm's statistics do): otherwise the producer's
  // own stores apply the chain (a convolution's kernel epilogue, conv_epilogue.h), and the value
  // may go channels-last (layout.h).
  bool prologue_input_stored_anyway(const Group& group) const {
    const std::set<int> members(group.prologue.begin(), group.prologue.end());
    const ir::Arg& x = graph_.nodes[group.anchor].args.at(0);
    const int64_t input_numel = x.is_ref() ? value_numel(graph_, *x.ref()) : 0;
    for (int index : group.prologue) {
      const ir::Node& node = graph_.nodes[index];
      for (int a = 0; a < operand_count(node.op) && a < static_cast<int>(node.args.size()); ++a) {
        const ValueRef* ref = node.args[a].ref();
        if (!ref || value_numel(graph_, *ref) != input_numel) continue;  // a per-plane value
        const ValueRef value = through_order_preserving_views(graph_, *ref).value_or(*ref);
        if (value.kind != ValueRef::Kind::node || members.count(value.index)) continue;
        const std::vector<int> readers = uses_.real_consumers(value);
        if (!uses_.reaches_output(value) &&
            std::all_of(readers.begin(), readers.end(), [&](int r) { return members.count(r); }))
          return false;
      }
    }
    return true;
  }

  // F9: each detached scalar joins the body of the next pending reduction.
  void claim_detached_scalars() {
    for (int i = 0; i < static_cast<int>(graph_.nodes.size()); ++i) {
      if (claimed_by_[i] >= 0 || opaque(i) || !is_detached_scalar(graph_, uses_, i)) continue;
      auto host = std::find_if(pending_.upper_bound(i), pending_.end(), [](const auto& entry) {
        return entry.second.kind == GroupKind::reduction;
      });
      if (host == pending_.end()) return;  // none after `i`, so none after the later nodes
      host->second.body.push_back(i);
      claimed_by_[i] = host->first;
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

  // F4: appends later elementwise nodes that read the group's values, and the side chains they
  // read (nodes that read only available values, pulled in by their first reader that joins).
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
    // Side-chain candidates, each with the candidates it reads.
    std::map<int, std::vector<int>> side;
    auto join = [&](auto& self, int j, const std::vector<int>& side_operands) -> void {
      for (int operand : side_operands)
        if (owner_[operand] < 0) self(self, operand, side.at(operand));
      group.body.push_back(j);
      owner_[j] = index;
      group_values.insert(value_key(node_value(j)));
      note_loads(j, loads);
    };
    const int start = group.nodes().back() + 1;
    for (int j = start; j < static_cast<int>(graph_.nodes.size()); ++j) {
      const ir::Node& node = graph_.nodes[j];
      if (owner_[j] >= 0 || claimed_by_[j] >= 0 || fusion_.folded_constants.count(j)) continue;
      if (!is_elementwise(node.op) || node.outputs.size() != 1 || node.outputs[0].numel() != numel)
        continue;
      bool reads_group = false, shares_load = false, ok = true;
      std::vector<int> side_operands;
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
        if (root && root->kind == ValueRef::Kind::node && side.count(root->index)) {
          side_operands.push_back(root->index);
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
      if (!ok) continue;
      if (reads_group || (group.kind == GroupKind::elementwise && shares_load))
        join(join, j, side_operands);
      else
        side[j] = std::move(side_operands);
    }
    std::sort(group.body.begin(), group.body.end());
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
  const ConvPrologueRule& conv_takes_prologue_;
  Uses uses_;
  std::vector<int> owner_;       // group index, -1 unassigned
  std::vector<int> claimed_by_;  // anchor of the pending group holding the node, -1 none
  std::map<int, Group> pending_;
  Fusion fusion_;
};

}  // namespace

Fusion fuse(const ir::Graph& graph, const ValueMap& values, bool keep_uncovered,
            const ConvPrologueRule& conv_takes_prologue) {
  return Fuser(graph, values, keep_uncovered, conv_takes_prologue).run();
}

}  // namespace stitch::plan
