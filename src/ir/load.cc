// graph.json → Graph (docs/graph-format.md). Every access checks the JSON type first, so malformed
// files produce an error naming the file, the node and the field, never a crash or an exception.
// Unknown keys are ignored (newer writers may add fields); unknown ops load as Op::opaque.
#include <limits>
#include <unordered_map>

#include "ir/ir.h"
#include "ir/json_reader.h"
#include "util/fs.h"

namespace stitch::ir {

namespace {

using json = nlohmann::ordered_json;

const json* find_key(const json& object, std::string_view key) {
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Error type_error(std::string_view what, std::string_view expected, const json& got) {
  return make_error("{}: expected {}, got {}", what, expected, json_type_name(got));
}

Result<int64_t> to_int64(const json& value, std::string_view what) {
  if (value.is_number_integer()) {  // true for signed and unsigned
    if (value.is_number_unsigned() &&
        value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      return make_error("{}: integer {} does not fit in int64", what, value.get<uint64_t>());
    return value.get<int64_t>();
  }
  return type_error(what, "an integer", value);
}

// A required (or, with `fallback`, optional) string field of `object`.
Result<std::string> string_field(const json& object, std::string_view key, std::string_view where,
                                 const char* fallback = nullptr) {
  const json* value = find_key(object, key);
  if (value == nullptr) {
    if (fallback != nullptr) return std::string(fallback);
    return make_error("{}: missing field '{}'", where, key);
  }
  if (!value->is_string()) return type_error(fmt::format("{}: {}", where, key), "a string", *value);
  return value->get<std::string>();
}

Result<std::vector<int64_t>> int_list(const json& value, std::string_view what) {
  if (!value.is_array()) return type_error(what, "an array of integers", value);
  std::vector<int64_t> ints;
  ints.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(int64_t item, to_int64(value[i], fmt::format("{}[{}]", what, i)));
    ints.push_back(item);
  }
  return ints;
}

Result<DType> dtype_field(const json& value, std::string_view what) {
  if (!value.is_string()) return type_error(what, "a dtype string", value);
  const auto& name = value.get_ref<const std::string&>();
  std::optional<DType> dtype = dtype_from_name(name);
  if (!dtype) return make_error("{}: unknown dtype '{}'", what, name);
  return *dtype;
}

// {"shape": [...], "dtype": "...", "strides": [...]}; strides default to contiguous.
Result<TensorType> parse_tensor_type(const json& object, std::string_view where) {
  if (!object.is_object()) return type_error(where, "an object", object);
  TensorType type;
  const json* shape = find_key(object, "shape");
  if (shape == nullptr) return make_error("{}: missing field 'shape'", where);
  STITCH_ASSIGN_OR_RETURN(type.shape, int_list(*shape, fmt::format("{}: shape", where)));
  const json* dtype = find_key(object, "dtype");
  if (dtype == nullptr) return make_error("{}: missing field 'dtype'", where);
  STITCH_ASSIGN_OR_RETURN(type.dtype, dtype_field(*dtype, fmt::format("{}: dtype", where)));
  if (const json* strides = find_key(object, "strides")) {
    STITCH_ASSIGN_OR_RETURN(type.strides, int_list(*strides, fmt::format("{}: strides", where)));
  } else {
    type.strides = contiguous_strides(type.shape);
  }
  return type;
}

// Resolves reference objects against what has been loaded so far.
struct RefContext {
  const Graph& graph;
  const std::unordered_map<std::string, int32_t>& node_ids;
  std::unordered_map<std::string_view, int32_t> param_ids;
  size_t limit = 0;  // nodes before this index may be referred to
};

Result<ValueRef> parse_ref_object(const json& object, const RefContext& context,
                                  std::string_view what) {
  ValueRef ref;
  if (const json* input = find_key(object, "input")) {
    if (object.size() != 1) return make_error("{}: input reference has extra keys", what);
    STITCH_ASSIGN_OR_RETURN(int64_t index, to_int64(*input, fmt::format("{}: input", what)));
    if (index < 0 || static_cast<uint64_t>(index) >= context.graph.inputs.size())
      return make_error("{}: refers to input {}, but the graph has {} inputs", what, index,
                        context.graph.inputs.size());
    ref.kind = ValueRef::Kind::input;
    ref.index = static_cast<int32_t>(index);
    return ref;
  }
  if (const json* param = find_key(object, "param")) {
    if (object.size() != 1) return make_error("{}: param reference has extra keys", what);
    if (!param->is_string()) return type_error(fmt::format("{}: param", what), "a string", *param);
    auto it = context.param_ids.find(param->get_ref<const std::string&>());
    if (it == context.param_ids.end())
      return make_error("{}: refers to unknown param '{}'", what,
                        param->get_ref<const std::string&>());
    ref.kind = ValueRef::Kind::param;
    ref.index = it->second;
    return ref;
  }
  const json* node = find_key(object, "node");
  if (node == nullptr) return make_error("{}: not a value reference", what);
  const json* out = find_key(object, "out");
  if (object.size() != (out != nullptr ? 2u : 1u))
    return make_error("{}: node reference has keys other than 'node' and 'out'", what);
  if (!node->is_string()) return type_error(fmt::format("{}: node", what), "a string", *node);
  const auto& id = node->get_ref<const std::string&>();
  auto it = context.node_ids.find(id);
  if (it == context.node_ids.end()) return make_error("{}: refers to unknown node '{}'", what, id);
  if (static_cast<size_t>(it->second) >= context.limit)
    return make_error(
        "{}: refers to node '{}' (#{}), which does not come earlier (nodes must be in "
        "topological order)",
        what, id, it->second);
  ref.kind = ValueRef::Kind::node;
  ref.index = it->second;
  if (out != nullptr) {
    STITCH_ASSIGN_OR_RETURN(int64_t index, to_int64(*out, fmt::format("{}: out", what)));
    const size_t n_outputs = context.graph.nodes[static_cast<size_t>(ref.index)].outputs.size();
    if (index < 0 || static_cast<uint64_t>(index) >= n_outputs)
      return make_error("{}: refers to output {} of node '{}', which has {} output(s)", what, index,
                        id, n_outputs);
    ref.out = static_cast<int32_t>(index);
  }
  return ref;
}

Result<Arg> parse_arg(const json& value, const RefContext& context, const std::string& what) {
  switch (value.type()) {
    case json::value_t::null:
      return Arg{};
    case json::value_t::boolean:
      return Arg{value.get<bool>()};
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      STITCH_ASSIGN_OR_RETURN(int64_t number, to_int64(value, what));
      return Arg{number};
    }
    case json::value_t::number_float:
      return Arg{value.get<double>()};
    case json::value_t::string:
      return Arg{value.get<std::string>()};
    case json::value_t::array: {
      ArgList items;
      items.reserve(value.size());
      for (size_t i = 0; i < value.size(); ++i) {
        STITCH_ASSIGN_OR_RETURN(Arg item,
                                parse_arg(value[i], context, fmt::format("{}[{}]", what, i)));
        items.push_back(std::move(item));
      }
      return Arg{std::move(items)};
    }
    case json::value_t::object:
      break;
    default:
      return type_error(what, "an argument", value);
  }
  if (value.size() == 1) {
    const auto first = value.begin();
    const std::string& key = first.key();
    const json& payload = first.value();
    if (key == "float") {
      if (payload.is_string()) {
        const auto& text = payload.get_ref<const std::string&>();
        if (text == "inf") return Arg{std::numeric_limits<double>::infinity()};
        if (text == "-inf") return Arg{-std::numeric_limits<double>::infinity()};
        if (text == "nan") return Arg{std::numeric_limits<double>::quiet_NaN()};
      }
      return make_error("{}: float: expected \"inf\", \"-inf\" or \"nan\", got {}", what,
                        payload.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    if (key == "dtype") {
      STITCH_ASSIGN_OR_RETURN(DType dtype, dtype_field(payload, what + ": dtype"));
      return Arg{dtype};
    }
    if (key == "device" || key == "enum") {
      if (!payload.is_string()) return type_error(what + ": " + key, "a string", payload);
      return Arg{EnumArg{key == "device" ? EnumArg::Kind::device : EnumArg::Kind::other,
                         payload.get<std::string>()}};
    }
  }
  if (value.contains("input") || value.contains("param") || value.contains("node")) {
    STITCH_ASSIGN_OR_RETURN(ValueRef ref, parse_ref_object(value, context, what));
    return Arg{ref};
  }
  std::vector<std::string> keys;
  for (const auto& [key, unused] : value.items())
    keys.push_back(key);
  return make_error("{}: unknown argument object with keys [{}]", what, fmt::join(keys, ", "));
}

// The `kind` field of an input or param (`what`), named by `from_name`'s table; `known` lists the
// kinds for the message.
template <typename Kind>
Result<Kind> kind_field(const json& object, std::string_view where, const char* fallback,
                        std::optional<Kind> (*from_name)(std::string_view), std::string_view what,
                        std::string_view known) {
  STITCH_ASSIGN_OR_RETURN(std::string name, string_field(object, "kind", where, fallback));
  std::optional<Kind> kind = from_name(name);
  if (!kind) return make_error("{}: kind: unknown {} kind '{}' ({})", where, what, name, known);
  return *kind;
}

Result<Input> parse_input(const json& object, size_t index) {
  const std::string where = fmt::format("inputs[{}]", index);
  if (!object.is_object()) return type_error(where, "an object", object);
  Input input;
  STITCH_ASSIGN_OR_RETURN(input.name, string_field(object, "name", where));
  STITCH_ASSIGN_OR_RETURN(
      input.kind, kind_field(object, where, "user", input_kind_from_name, "input", "user, random"));
  STITCH_ASSIGN_OR_RETURN(input.type, parse_tensor_type(object, where));
  STITCH_ASSIGN_OR_RETURN(input.distribution, string_field(object, "distribution", where, ""));
  STITCH_ASSIGN_OR_RETURN(input.source_op, string_field(object, "source_op", where, ""));
  return input;
}

Result<Param> parse_param(const json& object, size_t index) {
  const std::string where = fmt::format("params[{}]", index);
  if (!object.is_object()) return type_error(where, "an object", object);
  Param param;
  STITCH_ASSIGN_OR_RETURN(param.name, string_field(object, "name", where));
  STITCH_ASSIGN_OR_RETURN(param.kind, kind_field(object, where, "parameter", param_kind_from_name,
                                                 "param", "parameter, buffer, constant"));
  STITCH_ASSIGN_OR_RETURN(param.type, parse_tensor_type(object, where));
  return param;
}

Status parse_node(const json& object, size_t index, RefContext& context, Node& node) {
  // The id was checked in the first pass.
  node.id = object["id"].get<std::string>();
  const std::string where = fmt::format("nodes[{}] (id '{}')", index, node.id);
  STITCH_ASSIGN_OR_RETURN(node.op_name, string_field(object, "op", where));
  if (node.op_name.empty()) return make_error("{}: op: empty op name", where);
  node.op = op_from_name(node.op_name).value_or(Op::opaque);

  // Outputs first: references from later nodes check `out` against them.
  if (const json* outputs = find_key(object, "outputs")) {
    if (!outputs->is_array()) return type_error(where + ": outputs", "an array", *outputs);
    for (size_t o = 0; o < outputs->size(); ++o) {
      STITCH_ASSIGN_OR_RETURN(
          TensorType type,
          parse_tensor_type((*outputs)[o], fmt::format("{}: outputs[{}]", where, o)));
      node.outputs.push_back(std::move(type));
    }
  }
  if (const json* args = find_key(object, "args")) {
    if (!args->is_array()) return type_error(where + ": args", "an array", *args);
    for (size_t a = 0; a < args->size(); ++a) {
      STITCH_ASSIGN_OR_RETURN(
          Arg arg, parse_arg((*args)[a], context, fmt::format("{}: args[{}]", where, a)));
      node.args.push_back(std::move(arg));
    }
  }
  if (const json* kwargs = find_key(object, "kwargs")) {
    if (!kwargs->is_object()) return type_error(where + ": kwargs", "an object", *kwargs);
    for (const auto& [name, value] : kwargs->items()) {
      STITCH_ASSIGN_OR_RETURN(
          Arg arg, parse_arg(value, context, fmt::format("{}: kwargs['{}']", where, name)));
      node.kwargs.emplace_back(name, std::move(arg));
    }
  }
  STITCH_ASSIGN_OR_RETURN(node.module, string_field(object, "module", where, ""));
  STITCH_ASSIGN_OR_RETURN(node.module_type, string_field(object, "module_type", where, ""));
  return {};
}

Status parse_task(const json& object, TaskInfo& task) {
  if (!object.is_object()) return type_error("task", "an object", object);
  STITCH_ASSIGN_OR_RETURN(task.name, string_field(object, "name", "task", ""));
  STITCH_ASSIGN_OR_RETURN(task.file, string_field(object, "file", "task", ""));
  STITCH_ASSIGN_OR_RETURN(task.sha256, string_field(object, "sha256", "task", ""));
  if (const json* constants = find_key(object, "constants")) {
    if (!constants->is_object()) return type_error("task: constants", "an object", *constants);
    task.constants_json = constants->dump(-1, ' ', false, json::error_handler_t::replace);
  }
  return {};
}

const json* array_field(const json& root, std::string_view key, Status& status) {
  const json* value = find_key(root, key);
  if (value == nullptr) {
    status = make_error("missing field '{}'", key);
    return nullptr;
  }
  if (!value->is_array()) {
    status = type_error(key, "an array", *value);
    return nullptr;
  }
  return value;
}

// graph.json `state_updates` (optional): each value becomes an output after the user outputs,
// its buffer's name a `state_params` entry.
Result<Graph> parse_state_updates(const json& root, RefContext& context, Graph& graph) {
  const json* updates = find_key(root, "state_updates");
  if (!updates) return std::move(graph);
  if (!updates->is_array()) return type_error("state_updates", "an array", *updates);
  for (size_t i = 0; i < updates->size(); ++i) {
    const std::string where = fmt::format("state_updates[{}]", i);
    const json& update = (*updates)[i];
    if (!update.is_object()) return type_error(where, "an object", update);
    STITCH_ASSIGN_OR_RETURN(std::string param, string_field(update, "param", where));
    const json* value = find_key(update, "value");
    if (!value || !value->is_object()) return make_error("{}: value: needs a reference", where);
    STITCH_ASSIGN_OR_RETURN(ValueRef ref, parse_ref_object(*value, context, where + ": value"));
    graph.outputs.push_back(ref);
    graph.state_params.push_back(std::move(param));
  }
  return std::move(graph);
}

Result<Graph> parse_graph_json(const json& root) {
  if (!root.is_object()) return type_error("top level", "an object", root);
  STITCH_ASSIGN_OR_RETURN(std::string format, string_field(root, "format", "top level"));
  if (format != "stitchcuda.graph")
    return make_error("format: expected \"stitchcuda.graph\", got \"{}\"", format);
  Graph graph;
  const json* version = find_key(root, "version");
  if (version == nullptr) return make_error("missing field 'version'");
  STITCH_ASSIGN_OR_RETURN(int64_t version_number, to_int64(*version, "version"));
  if (version_number != 1)
    return make_error("version: unsupported version {} (this build reads version 1)",
                      version_number);
  graph.version = 1;
  if (const json* task = find_key(root, "task")) STITCH_TRY(parse_task(*task, graph.task));
  STITCH_ASSIGN_OR_RETURN(graph.torch_version,
                          string_field(root, "torch_version", "top level", ""));
  if (const json* training = find_key(root, "training")) {
    if (!training->is_boolean()) return type_error("training", "a boolean", *training);
    graph.training = training->get<bool>();
  }

  Status status;
  const json* inputs = array_field(root, "inputs", status);
  const json* params = array_field(root, "params", status);
  const json* nodes = array_field(root, "nodes", status);
  const json* outputs = array_field(root, "outputs", status);
  if (!status.ok()) return status.error();

  for (size_t i = 0; i < inputs->size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(Input input, parse_input((*inputs)[i], i));
    graph.inputs.push_back(std::move(input));
  }
  for (size_t i = 0; i < params->size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(Param param, parse_param((*params)[i], i));
    graph.params.push_back(std::move(param));
  }

  // First pass: node ids, so that a reference to a later node reads as an ordering error and a
  // reference to a missing one as a dangling reference.
  std::unordered_map<std::string, int32_t> node_ids;
  if (nodes->size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return make_error("nodes: too many nodes");
  for (size_t i = 0; i < nodes->size(); ++i) {
    const json& node = (*nodes)[i];
    const std::string where = fmt::format("nodes[{}]", i);
    if (!node.is_object()) return type_error(where, "an object", node);
    STITCH_ASSIGN_OR_RETURN(std::string id, string_field(node, "id", where));
    if (id.empty()) return make_error("{}: id: empty id", where);
    auto [it, inserted] = node_ids.emplace(id, static_cast<int32_t>(i));
    if (!inserted)
      return make_error("{} (id '{}'): duplicate node id (also nodes[{}])", where, id, it->second);
  }

  RefContext context{graph, node_ids, {}, 0};
  for (size_t i = 0; i < graph.params.size(); ++i)
    context.param_ids.emplace(graph.params[i].name, static_cast<int32_t>(i));
  graph.nodes.resize(nodes->size());
  for (size_t i = 0; i < nodes->size(); ++i) {
    context.limit = i;
    STITCH_TRY(parse_node((*nodes)[i], i, context, graph.nodes[i]));
  }

  context.limit = graph.nodes.size();
  for (size_t i = 0; i < outputs->size(); ++i) {
    const std::string what = fmt::format("outputs[{}]", i);
    const json& value = (*outputs)[i];
    if (!value.is_object()) return type_error(what, "a value reference", value);
    STITCH_ASSIGN_OR_RETURN(ValueRef ref, parse_ref_object(value, context, what));
    graph.outputs.push_back(ref);
  }
  return parse_state_updates(root, context, graph);
}

}  // namespace

Result<Graph> parse_graph(std::string_view json_text, std::string_view source_name) {
  const std::string context(source_name);
  auto root = read_json_strict(json_text);
  if (!root.ok()) return root.error().with_context(context);
  auto graph = parse_graph_json(*root);
  if (!graph.ok()) return graph.error().with_context(context);
  if (Status status = verify(*graph); !status.ok()) return status.error().with_context(context);
  return graph;
}

Result<Graph> load_graph(const std::string& path) {
  auto text = read_file(path);
  if (!text.ok()) return text.error().with_context(fmt::format("loading graph {}", path));
  return parse_graph(*text, path);
}

}  // namespace stitch::ir
