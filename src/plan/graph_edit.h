// Tools the passes share: rebuilding a graph node by node (GraphRewriter), making new nodes with
// contiguous output types, and the use lists of every value (Uses), views followed or not.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/ir.h"

namespace stitch::plan {

ir::TensorType contiguous_type(std::vector<int64_t> shape, ir::DType dtype);
ir::Arg ref_arg(const ir::ValueRef& ref);
ir::Arg int_list_arg(const std::vector<int64_t>& values);
// The module path/type of `origin` are kept on the new node, for messages.
ir::Node new_node(std::string id, ir::Op op, std::vector<ir::Arg> args,
                  std::vector<ir::TensorType> outputs, const ir::Node& origin);

// Calls fn on every value reference in the node's args and kwargs (lists included).
void for_each_ref(const ir::Node& node, const std::function<void(const ir::ValueRef&)>& fn);
std::string value_key(const ir::ValueRef& ref);  // "i3", "p0", "n12.1": a map key
// The param indices of the buffers forward updates (graph.state_params): they change between calls.
std::set<int32_t> state_param_indices(const ir::Graph& graph);
// Output `out` of node `index`.
inline ir::ValueRef node_value(int index, int out = 0) {
  return ir::ValueRef{ir::ValueRef::Kind::node, index, out};
}

// Builds a new graph from `source`: inputs, params and task info are copied; nodes are kept
// (references remapped) or replaced by new nodes; every old value maps to a new one.
class GraphRewriter {
 public:
  explicit GraphRewriter(const ir::Graph& source);

  // Copies source node `index` with its references remapped; its outputs map to the copy's.
  void keep(int index) { emit(index, copy_node(index)); }
  // Source node `index` with its references remapped (not added).
  ir::Node copy_node(int index) const;
  // Appends `node` (a possibly edited copy_node(index)) and maps the source node's outputs to it.
  void emit(int index, ir::Node node);
  // Appends a node whose args already use new references; its id is made unique by suffixing.
  // Returns its output 0.
  ir::ValueRef add(ir::Node node);
  // From now on, uses of `old_ref` (a source value) refer to `new_ref` (a new value).
  void map_value(const ir::ValueRef& old_ref, const ir::ValueRef& new_ref);
  ir::ValueRef mapped(const ir::ValueRef& old_ref) const;
  ir::Arg remap(const ir::Arg& arg) const;
  const ir::Graph& graph() const { return graph_; }  // the new graph so far
  // Remaps the outputs; every output must have been mapped.
  ir::Graph finish() &&;

 private:
  const ir::Graph& source_;
  ir::Graph graph_;
  std::vector<std::vector<std::optional<ir::ValueRef>>> node_map_;
  std::unordered_set<std::string> ids_;
};

// Who uses each value. Direct consumers are node indices (a node appears once per value even when
// it takes the value twice).
class Uses {
 public:
  explicit Uses(const ir::Graph& graph);
  const std::vector<int>& consumers(const ir::ValueRef& ref) const;
  bool is_graph_output(const ir::ValueRef& ref) const;
  // The non-view nodes that read the value, directly or through chains of views.
  std::vector<int> real_consumers(const ir::ValueRef& ref) const;
  // The value, or a view of it, is a graph output.
  bool reaches_output(const ir::ValueRef& ref) const;

 private:
  const ir::Graph& graph_;
  std::vector<std::vector<std::vector<int>>> node_consumers_;
  std::vector<std::vector<int>> input_consumers_, param_consumers_;
  std::unordered_set<std::string> outputs_;
};

}  // namespace stitch::plan
