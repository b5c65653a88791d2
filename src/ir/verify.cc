// verify(): the structural invariants every Graph holds after loading and after every pass.
// The first problem found is returned, naming the node (index and id) and the field.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "ir/ir.h"
#include "ir/json_reader.h"

namespace stitch::ir {

namespace {

// Empty when the type is sound; otherwise the problem, without location.
std::string check_type(const TensorType& type) {
  if (static_cast<int>(type.dtype) >= kDTypeCount)
    return fmt::format("invalid dtype value {}", static_cast<int>(type.dtype));
  if (type.shape.size() != type.strides.size())
    return fmt::format("shape has rank {} but strides has rank {}", type.shape.size(),
                       type.strides.size());
  for (size_t d = 0; d < type.shape.size(); ++d) {
    if (type.shape[d] < 0) return fmt::format("shape[{}] is negative ({})", d, type.shape[d]);
    if (type.strides[d] < 0) return fmt::format("strides[{}] is negative ({})", d, type.strides[d]);
  }
  const std::optional<int64_t> numel = checked_numel(type.shape);
  int64_t bytes = 0;
  if (!numel || __builtin_mul_overflow(*numel, int64_t{dtype_size(type.dtype)}, &bytes))
    return fmt::format("shape [{}] is too large (byte size overflows 64 bits)",
                       fmt::join(type.shape, ", "));
  return {};
}

// Empty when `ref` names an existing value that may be used by node `limit` (only nodes before
// it); limit == nodes.size() for graph outputs.
std::string check_ref(const Graph& graph, const ValueRef& ref, size_t limit) {
  switch (ref.kind) {
    case ValueRef::Kind::input:
      if (ref.index < 0 || static_cast<size_t>(ref.index) >= graph.inputs.size())
        return fmt::format("refers to input {}, but the graph has {} inputs", ref.index,
                           graph.inputs.size());
      if (ref.out != 0) return fmt::format("input reference has out = {} (must be 0)", ref.out);
      return {};
    case ValueRef::Kind::param:
      if (ref.index < 0 || static_cast<size_t>(ref.index) >= graph.params.size())
        return fmt::format("refers to param {}, but the graph has {} params", ref.index,
                           graph.params.size());
      if (ref.out != 0) return fmt::format("param reference has out = {} (must be 0)", ref.out);
      return {};
    case ValueRef::Kind::node: {
      if (ref.index < 0 || static_cast<size_t>(ref.index) >= graph.nodes.size())
        return fmt::format("refers to node #{}, but the graph has {} nodes", ref.index,
                           graph.nodes.size());
      const Node& producer = graph.nodes[static_cast<size_t>(ref.index)];
      if (static_cast<size_t>(ref.index) >= limit)
        return fmt::format(
            "refers to node #{} '{}', which does not come earlier (nodes must be in "
            "topological order)",
            ref.index, producer.id);
      if (ref.out < 0 || static_cast<size_t>(ref.out) >= producer.outputs.size())
        return fmt::format("refers to output {} of node '{}', which has {} output(s)", ref.out,
                           producer.id, producer.outputs.size());
      return {};
    }
  }
  return fmt::format("reference of invalid kind {}", static_cast<int>(ref.kind));
}

// Walks an argument (lists included); `path` is extended in place to name the offending element.
std::string check_arg(const Graph& graph, const Arg& arg, size_t limit, std::string& path) {
  if (const ValueRef* ref = arg.ref()) {
    std::string problem = check_ref(graph, *ref, limit);
    return problem;
  }
  if (const auto* dtype = std::get_if<DType>(&arg.value)) {
    if (static_cast<int>(*dtype) >= kDTypeCount)
      return fmt::format("invalid dtype value {}", static_cast<int>(*dtype));
  }
  if (const ArgList* items = arg.list()) {
    const size_t path_size = path.size();
    for (size_t i = 0; i < items->size(); ++i) {
      path += fmt::format("[{}]", i);
      std::string problem = check_arg(graph, (*items)[i], limit, path);
      if (!problem.empty()) return problem;
      path.resize(path_size);
    }
  }
  return {};
}

// Each state update names a buffer param once and has its shape and dtype.
Status verify_state_updates(const Graph& graph) {
  if (graph.state_params.size() > graph.outputs.size())
    return make_error("{} state updates but {} outputs", graph.state_params.size(),
                      graph.outputs.size());
  std::unordered_set<std::string_view> seen;
  for (size_t i = 0; i < graph.state_params.size(); ++i) {
    const std::string& name = graph.state_params[i];
    const std::string where = fmt::format("state_updates[{}] ('{}')", i, name);
    auto param = std::find_if(graph.params.begin(), graph.params.end(),
                              [&](const Param& p) { return p.name == name; });
    if (param == graph.params.end() || param->kind != ParamKind::buffer)
      return make_error("{}: no buffer of that name", where);
    if (!seen.insert(name).second) return make_error("{}: updated twice", where);
    const TensorType& value = graph.type_of(graph.outputs[graph.user_output_count() + i]);
    if (value.shape != param->type.shape || value.dtype != param->type.dtype)
      return make_error("{}: the value's shape or dtype differs from the buffer's", where);
  }
  return {};
}

}  // namespace

Status verify(const Graph& graph) {
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const Input& input = graph.inputs[i];
    if (input.name.empty()) return make_error("inputs[{}]: empty name", i);
    if (std::string problem = check_type(input.type); !problem.empty())
      return make_error("inputs[{}] '{}': {}", i, input.name, problem);
  }

  std::unordered_map<std::string_view, size_t> param_names;
  for (size_t i = 0; i < graph.params.size(); ++i) {
    const Param& param = graph.params[i];
    if (param.name.empty()) return make_error("params[{}]: empty name", i);
    if (auto [it, inserted] = param_names.emplace(param.name, i); !inserted)
      return make_error("params[{}]: duplicate name '{}' (also params[{}])", i, param.name,
                        it->second);
    if (std::string problem = check_type(param.type); !problem.empty())
      return make_error("params[{}] '{}': {}", i, param.name, problem);
  }

  std::unordered_map<std::string_view, size_t> node_ids;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (node.id.empty()) return make_error("node #{}: empty id", i);
    const std::string where = fmt::format("node #{} '{}'", i, node.id);
    if (auto [it, inserted] = node_ids.emplace(node.id, i); !inserted)
      return make_error("{}: duplicate id (also node #{})", where, it->second);
    if (static_cast<int>(node.op) >= kOpCount)
      return make_error("{}: invalid op value {}", where, static_cast<int>(node.op));
    if (node.op == Op::opaque && node.op_name.empty())
      return make_error("{}: opaque op without an op name", where);
    if (node.op != Op::opaque && !node.op_name.empty() && node.op_name != op_name(node.op))
      return make_error("{}: op is {} but op_name says '{}'", where, op_name(node.op),
                        node.op_name);
    for (size_t a = 0; a < node.args.size(); ++a) {
      std::string path = fmt::format("args[{}]", a);
      if (std::string problem = check_arg(graph, node.args[a], i, path); !problem.empty())
        return make_error("{}: {}: {}", where, path, problem);
    }
    std::unordered_set<std::string_view> kwarg_names;
    for (const auto& [name, arg] : node.kwargs) {
      if (!kwarg_names.insert(name).second)
        return make_error("{}: kwargs: duplicate name '{}'", where, name);
      std::string path = fmt::format("kwargs['{}']", name);
      if (std::string problem = check_arg(graph, arg, i, path); !problem.empty())
        return make_error("{}: {}: {}", where, path, problem);
    }
    for (size_t o = 0; o < node.outputs.size(); ++o)
      if (std::string problem = check_type(node.outputs[o]); !problem.empty())
        return make_error("{}: outputs[{}]: {}", where, o, problem);
  }

  for (size_t i = 0; i < graph.outputs.size(); ++i)
    if (std::string problem = check_ref(graph, graph.outputs[i], graph.nodes.size());
        !problem.empty())
      return make_error("graph outputs[{}]: {}", i, problem);
  STITCH_TRY(verify_state_updates(graph));

  if (!graph.task.constants_json.empty()) {
    auto constants = read_json_strict(graph.task.constants_json);
    if (!constants.ok() || !constants->is_object())
      return make_error("task.constants is not a JSON object");
  }
  return {};
}

}  // namespace stitch::ir
