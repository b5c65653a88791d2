// GraphRewriter, Uses and node-making helpers (graph_edit.h).
#include "plan/graph_edit.h"

#include <algorithm>

#include <fmt/format.h>

namespace stitch::plan {

ir::TensorType contiguous_type(std::vector<int64_t> shape, ir::DType dtype) {
  ir::TensorType type;
  type.strides = ir::contiguous_strides(shape);
  type.shape = std::move(shape);
  type.dtype = dtype;
  return type;
}

ir::Arg ref_arg(const ir::ValueRef& ref) {
  return ir::Arg{ref};
}

ir::Arg int_list_arg(const std::vector<int64_t>& values) {
  ir::ArgList list;
  list.reserve(values.size());
  for (int64_t value : values) {
    ir::Arg item;
    item.value = value;
    list.push_back(std::move(item));
  }
  return ir::Arg{std::move(list)};
}

ir::Node new_node(std::string id, ir::Op op, std::vector<ir::Arg> args,
                  std::vector<ir::TensorType> outputs, const ir::Node& origin) {
  ir::Node node;
  node.id = std::move(id);
  node.op = op;
  node.op_name = std::string(ir::op_name(op));
  node.args = std::move(args);
  node.outputs = std::move(outputs);
  node.module = origin.module;
  node.module_type = origin.module_type;
  return node;
}

namespace {
void visit_refs(const ir::Arg& arg, const std::function<void(const ir::ValueRef&)>& fn) {
  if (const ir::ValueRef* ref = arg.ref()) {
    fn(*ref);
  } else if (const ir::ArgList* items = arg.list()) {
    for (const ir::Arg& item : *items)
      visit_refs(item, fn);
  }
}
}  // namespace

void for_each_ref(const ir::Node& node, const std::function<void(const ir::ValueRef&)>& fn) {
  for (const ir::Arg& arg : node.args)
    visit_refs(arg, fn);
  for (const auto& [name, arg] : node.kwargs)
    visit_refs(arg, fn);
}

std::string value_key(const ir::ValueRef& ref) {
  switch (ref.kind) {
    case ir::ValueRef::Kind::input:
      return fmt::format("i{}", ref.index);
    case ir::ValueRef::Kind::param:
      return fmt::format("p{}", ref.index);
    case ir::ValueRef::Kind::node:
      break;
  }
  return fmt::format("n{}.{}", ref.index, ref.out);
}

std::set<int32_t> state_param_indices(const ir::Graph& graph) {
  std::set<int32_t> state;
  for (const std::string& name : graph.state_params)
    for (size_t p = 0; p < graph.params.size(); ++p)
      if (graph.params[p].name == name) state.insert(static_cast<int32_t>(p));
  return state;
}

// ---- GraphRewriter
// -------------------------------------------------------------------------------

GraphRewriter::GraphRewriter(const ir::Graph& source) : source_(source) {
  graph_.version = source.version;
  graph_.task = source.task;
  graph_.torch_version = source.torch_version;
  graph_.training = source.training;
  graph_.inputs = source.inputs;
  graph_.params = source.params;
  graph_.state_params = source.state_params;  // the last outputs stay the buffers' new values
  node_map_.resize(source.nodes.size());
  for (size_t i = 0; i < source.nodes.size(); ++i)
    node_map_[i].resize(source.nodes[i].outputs.size());
}

ir::ValueRef GraphRewriter::mapped(const ir::ValueRef& old_ref) const {
  if (old_ref.kind != ir::ValueRef::Kind::node) return old_ref;  // inputs and params keep indices
  const auto& slot = node_map_.at(old_ref.index).at(old_ref.out);
  if (!slot) {
    // A pass bug, not bad input: passes visit nodes in order and map each before its uses.
    fmt::print(stderr, "internal error: value '{}' used before it was mapped\n",
               source_.name_of(old_ref));
    std::abort();
  }
  return *slot;
}

void GraphRewriter::map_value(const ir::ValueRef& old_ref, const ir::ValueRef& new_ref) {
  if (old_ref.kind == ir::ValueRef::Kind::node)
    node_map_.at(old_ref.index).at(old_ref.out) = new_ref;
}

ir::Arg GraphRewriter::remap(const ir::Arg& arg) const {
  if (const ir::ValueRef* ref = arg.ref()) return ir::Arg{mapped(*ref)};
  if (const ir::ArgList* items = arg.list()) {
    ir::ArgList list;
    for (const ir::Arg& item : *items)
      list.push_back(remap(item));
    return ir::Arg{std::move(list)};
  }
  return arg;
}

ir::Node GraphRewriter::copy_node(int index) const {
  ir::Node node = source_.nodes[index];
  for (ir::Arg& arg : node.args)
    arg = remap(arg);
  for (auto& [name, arg] : node.kwargs)
    arg = remap(arg);
  return node;
}

void GraphRewriter::emit(int index, ir::Node node) {
  const ir::ValueRef first = add(std::move(node));
  for (size_t out = 0; out < node_map_[index].size(); ++out)
    node_map_[index][out] =
        ir::ValueRef{ir::ValueRef::Kind::node, first.index, static_cast<int32_t>(out)};
}

ir::ValueRef GraphRewriter::add(ir::Node node) {
  if (ids_.count(node.id)) {
    for (int suffix = 2;; ++suffix) {
      std::string candidate = fmt::format("{}_{}", node.id, suffix);
      if (!ids_.count(candidate)) {
        node.id = std::move(candidate);
        break;
      }
    }
  }
  ids_.insert(node.id);
  graph_.nodes.push_back(std::move(node));
  return ir::ValueRef{ir::ValueRef::Kind::node, static_cast<int32_t>(graph_.nodes.size() - 1), 0};
}

ir::Graph GraphRewriter::finish() && {
  for (const ir::ValueRef& output : source_.outputs)
    graph_.outputs.push_back(mapped(output));
  return std::move(graph_);
}

// ---- Uses
// ----------------------------------------------------------------------------------------

Uses::Uses(const ir::Graph& graph) : graph_(graph) {
  node_consumers_.resize(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    node_consumers_[i].resize(graph.nodes[i].outputs.size());
  input_consumers_.resize(graph.inputs.size());
  param_consumers_.resize(graph.params.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    for_each_ref(graph.nodes[i], [&](const ir::ValueRef& ref) {
      std::vector<int>* list = nullptr;
      switch (ref.kind) {
        case ir::ValueRef::Kind::input:
          list = &input_consumers_[ref.index];
          break;
        case ir::ValueRef::Kind::param:
          list = &param_consumers_[ref.index];
          break;
        case ir::ValueRef::Kind::node:
          list = &node_consumers_[ref.index][ref.out];
          break;
      }
      if (list->empty() || list->back() != static_cast<int>(i))
        list->push_back(static_cast<int>(i));
    });
  }
  for (const ir::ValueRef& output : graph.outputs)
    outputs_.insert(value_key(output));
}

const std::vector<int>& Uses::consumers(const ir::ValueRef& ref) const {
  switch (ref.kind) {
    case ir::ValueRef::Kind::input:
      return input_consumers_.at(ref.index);
    case ir::ValueRef::Kind::param:
      return param_consumers_.at(ref.index);
    case ir::ValueRef::Kind::node:
      break;
  }
  return node_consumers_.at(ref.index).at(ref.out);
}

bool Uses::is_graph_output(const ir::ValueRef& ref) const {
  return outputs_.count(value_key(ref)) > 0;
}

std::vector<int> Uses::real_consumers(const ir::ValueRef& ref) const {
  std::vector<int> result;
  std::vector<ir::ValueRef> pending{ref};
  while (!pending.empty()) {
    const ir::ValueRef value = pending.back();
    pending.pop_back();
    for (int consumer : consumers(value)) {
      const ir::Node& node = graph_.nodes[consumer];
      if (ir::is_view(node.op)) {
        for (size_t out = 0; out < node.outputs.size(); ++out)
          pending.push_back({ir::ValueRef::Kind::node, consumer, static_cast<int32_t>(out)});
      } else if (std::find(result.begin(), result.end(), consumer) == result.end()) {
        result.push_back(consumer);
      }
    }
  }
  std::sort(result.begin(), result.end());
  return result;
}

bool Uses::reaches_output(const ir::ValueRef& ref) const {
  if (is_graph_output(ref)) return true;
  for (int consumer : consumers(ref)) {
    const ir::Node& node = graph_.nodes[consumer];
    if (!ir::is_view(node.op)) continue;
    for (size_t out = 0; out < node.outputs.size(); ++out)
      if (reaches_output({ir::ValueRef::Kind::node, consumer, static_cast<int32_t>(out)}))
        return true;
  }
  return false;
}

}  // namespace stitch::plan
