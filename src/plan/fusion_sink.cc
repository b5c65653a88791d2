// Fusion rule F11 (fusion.h): elementwise groups sunk into the one later elementwise group that
// reads them, after the sweep.
#include <algorithm>
#include <set>

#include "plan/fusion.h"
#include "plan/graph_edit.h"
#include "plan/op_traits.h"

namespace stitch::plan {
namespace {

using ir::ValueRef;

bool plain_elementwise(const Group& group) {
  return group.kind == GroupKind::elementwise && group.anchor < 0 && !group.body.empty();
}

// `ref` is node `member`'s value seen through views.
bool reaches_through_views(const ir::Graph& graph, ValueRef ref, int member) {
  while (ref.kind == ValueRef::Kind::node) {
    if (ref.index == member) return true;
    const ir::Node& node = graph.nodes[ref.index];
    if (!ir::is_view(node.op) || node.args.empty() || !node.args[0].is_ref()) return false;
    ref = *node.args[0].ref();
  }
  return false;
}

// Every operand of `reader` that is a value of `members` is one directly or through views that
// keep the element order (a body step reads it as it stands), never through a reordering view.
bool reads_in_order(const ir::Graph& graph, int reader, const std::set<int>& members) {
  const ir::Node& node = graph.nodes[reader];
  for (int a = 0; a < operand_count(node.op) && a < static_cast<int>(node.args.size()); ++a) {
    const ValueRef* ref = node.args[a].ref();
    if (ref == nullptr) continue;
    const auto root = through_order_preserving_views(graph, *ref);
    if (root && root->kind == ValueRef::Kind::node && members.count(root->index)) continue;
    for (const int member : members)
      if (reaches_through_views(graph, *ref, member)) return false;
  }
  return true;
}

// Per node, whether its value changes between calls: it reads, through any chain, a graph input
// or a buffer forward updates (a state param). The others are constants, computed once at init
// (memory_plan.h's mark_init_subtasks), which a forward pass must not take over.
std::vector<bool> varying_nodes(const ir::Graph& graph) {
  const std::set<int32_t> state = state_param_indices(graph);
  std::vector<bool> varying(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for_each_ref(graph.nodes[i], [&](const ValueRef& ref) {
      if (ref.kind == ValueRef::Kind::input ||
          (ref.kind == ValueRef::Kind::param && state.count(ref.index)) ||
          (ref.kind == ValueRef::Kind::node && varying[ref.index]))
        varying[i] = true;
    });
  return varying;
}

// The one later group that reads the values of group `g` from outside it, where that is all that
// reads them (no graph output) and it reads them in order; -1 otherwise.
int sole_reader_group(const ir::Graph& graph, const Uses& uses, const std::vector<int>& owner,
                      const Group& group, int g) {
  const std::set<int> members(group.body.begin(), group.body.end());
  int target = -1;
  for (int node : group.body) {
    const ValueRef value{ValueRef::Kind::node, node, 0};
    if (uses.reaches_output(value)) return -1;
    for (int reader : uses.real_consumers(value)) {
      if (members.count(reader)) continue;
      if (owner[reader] <= g || (target >= 0 && owner[reader] != target) ||
          !reads_in_order(graph, reader, members))
        return -1;
      target = owner[reader];
    }
  }
  return target;
}

}  // namespace

void sink_elementwise_groups(const ir::Graph& graph, const Uses& uses, std::vector<Group>& groups) {
  std::vector<int> owner(graph.nodes.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g)
    for (int node : groups[g].nodes())
      owner[node] = static_cast<int>(g);
  const std::vector<bool> varying = varying_nodes(graph);
  std::vector<bool> sunk(groups.size(), false);
  for (size_t g = 0; g < groups.size(); ++g) {
    // A pass over constants runs once at init: it stays a pass of its own.
    if (!plain_elementwise(groups[g]) || std::none_of(groups[g].body.begin(), groups[g].body.end(),
                                                      [&](int node) { return varying[node]; }))
      continue;
    const int target = sole_reader_group(graph, uses, owner, groups[g], static_cast<int>(g));
    if (target < 0) continue;
    Group& sink = groups[target];
    if (!plain_elementwise(sink) || graph.nodes[sink.body[0]].outputs[0].shape !=
                                        graph.nodes[groups[g].body[0]].outputs[0].shape)
      continue;
    sink.body.insert(sink.body.end(), groups[g].body.begin(), groups[g].body.end());
    std::sort(sink.body.begin(), sink.body.end());
    for (int node : groups[g].body)
      owner[node] = target;
    sunk[g] = true;
  }
  std::vector<Group> kept;
  for (size_t g = 0; g < groups.size(); ++g)
    if (!sunk[g]) kept.push_back(std::move(groups[g]));
  groups = std::move(kept);
}

}  // namespace stitch::plan
