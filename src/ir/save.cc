// Graph → graph.json text (docs/graph-format.md). Written by hand rather than through a JSON DOM
// so that the layout is fixed (one input/param/node per line, diffable) and floats keep their
// kind: a float is always written with a decimal point or exponent, non-finite ones as
// {"float": "inf"}, so parse(serialize(g)) == g and serialization is byte-for-byte stable.
#include <cmath>

#include "ir/ir.h"
#include "ir/json_reader.h"
#include "util/fs.h"

namespace stitch::ir {

namespace {

using json = nlohmann::ordered_json;

class GraphWriter {
 public:
  explicit GraphWriter(const Graph& graph) : graph_(graph) {}

  std::string write() {
    out_ += "{\n";
    out_ += "  \"format\": \"stitchcuda.graph\",\n";
    out_ += fmt::format("  \"version\": {},\n", graph_.version);
    out_ += "  \"task\": ";
    write_task();
    out_ += ",\n  \"torch_version\": ";
    write_string(graph_.torch_version);
    out_ += fmt::format(",\n  \"training\": {},\n", graph_.training ? "true" : "false");

    out_ += "  \"inputs\": ";
    write_lines(graph_.inputs.size(), [&](size_t i) { write_input(graph_.inputs[i]); });
    out_ += ",\n  \"params\": ";
    write_lines(graph_.params.size(), [&](size_t i) { write_param(graph_.params[i]); });
    out_ += ",\n  \"nodes\": ";
    write_lines(graph_.nodes.size(), [&](size_t i) { write_node(graph_.nodes[i]); });
    out_ += ",\n  \"outputs\": ";
    const size_t users = graph_.user_output_count();
    write_inline_list(users, [&](size_t i) { write_ref(graph_.outputs[i]); });
    if (!graph_.state_params.empty()) {
      out_ += ",\n  \"state_updates\": ";
      write_lines(graph_.state_params.size(), [&](size_t i) {
        out_ += "{\"param\": ";
        write_string(graph_.state_params[i]);
        out_ += ", \"value\": ";
        write_ref(graph_.outputs[users + i]);
        out_ += "}";
      });
    }
    out_ += "\n}\n";
    return std::move(out_);
  }

 private:
  // An array with one element per line, or "[]".
  template <typename WriteItem>
  void write_lines(size_t count, WriteItem write_item) {
    if (count == 0) {
      out_ += "[]";
      return;
    }
    out_ += "[\n";
    for (size_t i = 0; i < count; ++i) {
      out_ += "    ";
      write_item(i);
      out_ += i + 1 < count ? ",\n" : "\n";
    }
    out_ += "  ]";
  }

  // "[a, b, ...]" on one line.
  template <typename WriteItem>
  void write_inline_list(size_t count, WriteItem write_item) {
    out_ += "[";
    for (size_t i = 0; i < count; ++i) {
      if (i > 0) out_ += ", ";
      write_item(i);
    }
    out_ += "]";
  }

  void write_string(std::string_view text) {
    // nlohmann escapes; invalid UTF-8 (only possible in a Graph built in code) becomes U+FFFD.
    out_ += json(text).dump(-1, ' ', false, json::error_handler_t::replace);
  }

  void write_key(std::string_view key) {
    write_string(key);
    out_ += ": ";
  }

  // `"key": "value"` in an object, after ", " unless it is the object's first field.
  void write_string_field(std::string_view key, std::string_view value, bool first = false) {
    if (!first) out_ += ", ";
    write_key(key);
    write_string(value);
  }

  void write_ints(const std::vector<int64_t>& ints) {
    out_ += fmt::format("[{}]", fmt::join(ints, ", "));
  }

  void write_double(double value) {
    if (std::isnan(value)) {
      out_ += R"({"float": "nan"})";
    } else if (std::isinf(value)) {
      out_ += value > 0 ? R"({"float": "inf"})" : R"({"float": "-inf"})";
    } else {
      std::string text = fmt::format("{}", value);  // shortest text that reads back exactly
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      out_ += text;
    }
  }

  // Free-form JSON (task constants) in the same style as the rest: ", " and ": " separators.
  void write_json(const json& value) {
    if (value.is_object()) {
      out_ += "{";
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (it != value.begin()) out_ += ", ";
        write_key(it.key());
        write_json(it.value());
      }
      out_ += "}";
    } else if (value.is_array()) {
      write_inline_list(value.size(), [&](size_t i) { write_json(value[i]); });
    } else if (value.is_number_float()) {
      write_double(value.get<double>());
    } else {
      out_ += value.dump(-1, ' ', false, json::error_handler_t::replace);
    }
  }

  void write_task() {
    const TaskInfo& task = graph_.task;
    out_ += "{";
    write_string_field("name", task.name, /*first=*/true);
    write_string_field("file", task.file);
    write_string_field("sha256", task.sha256);
    if (!task.constants_json.empty()) {
      out_ += ", ";
      write_key("constants");
      // Re-dumped so the text is canonical; verify() rejects text that is not an object.
      auto constants = read_json_strict(task.constants_json);
      if (constants.ok() && constants->is_object())
        write_json(*constants);
      else
        out_ += "{}";
    }
    out_ += "}";
  }

  void write_type_fields(const TensorType& type) {
    write_key("shape");
    write_ints(type.shape);
    out_ += ", ";
    write_key("dtype");
    write_string(dtype_name(type.dtype));
    out_ += ", ";
    write_key("strides");
    write_ints(type.strides);
  }

  // The fields an input and a param share: name, kind and tensor type.
  void write_named_type(std::string_view name, std::string_view kind, const TensorType& type) {
    write_string_field("name", name, /*first=*/true);
    write_string_field("kind", kind);
    out_ += ", ";
    write_type_fields(type);
  }

  void write_input(const Input& input) {
    out_ += "{";
    write_named_type(input.name, input_kind_name(input.kind), input.type);
    if (!input.distribution.empty()) write_string_field("distribution", input.distribution);
    if (!input.source_op.empty()) write_string_field("source_op", input.source_op);
    out_ += "}";
  }

  void write_param(const Param& param) {
    out_ += "{";
    write_named_type(param.name, param_kind_name(param.kind), param.type);
    out_ += "}";
  }

  void write_ref(const ValueRef& ref) {
    switch (ref.kind) {
      case ValueRef::Kind::input:
        out_ += fmt::format(R"({{"input": {}}})", ref.index);
        return;
      case ValueRef::Kind::param:
        out_ += "{";
        write_key("param");
        write_string(graph_.name_of(ref));
        out_ += "}";
        return;
      case ValueRef::Kind::node: {
        out_ += "{";
        write_key("node");
        const bool valid = ref.index >= 0 && static_cast<size_t>(ref.index) < graph_.nodes.size();
        write_string(valid ? graph_.nodes[static_cast<size_t>(ref.index)].id : graph_.name_of(ref));
        if (ref.out != 0) out_ += fmt::format(", \"out\": {}", ref.out);
        out_ += "}";
        return;
      }
    }
    out_ += "null";  // unreachable for a valid kind
  }

  void write_arg(const Arg& arg) {
    std::visit(
        [&](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::monostate>) {
            out_ += "null";
          } else if constexpr (std::is_same_v<T, bool>) {
            out_ += value ? "true" : "false";
          } else if constexpr (std::is_same_v<T, int64_t>) {
            out_ += fmt::format("{}", value);
          } else if constexpr (std::is_same_v<T, double>) {
            write_double(value);
          } else if constexpr (std::is_same_v<T, std::string>) {
            write_string(value);
          } else if constexpr (std::is_same_v<T, DType>) {
            out_ += "{";
            write_key("dtype");
            write_string(dtype_name(value));
            out_ += "}";
          } else if constexpr (std::is_same_v<T, EnumArg>) {
            out_ += "{";
            write_key(value.kind == EnumArg::Kind::device ? "device" : "enum");
            write_string(value.value);
            out_ += "}";
          } else if constexpr (std::is_same_v<T, ValueRef>) {
            write_ref(value);
          } else if constexpr (std::is_same_v<T, ArgList>) {
            write_inline_list(value.size(), [&](size_t i) { write_arg(value[i]); });
          }
        },
        arg.value);
  }

  void write_node(const Node& node) {
    out_ += "{";
    write_string_field("id", node.id, /*first=*/true);
    // For known ops the table's name is canonical (verify() keeps op_name consistent with it).
    write_string_field("op",
                       node.op == Op::opaque ? std::string_view(node.op_name) : op_name(node.op));
    out_ += ", ";
    write_key("args");
    write_inline_list(node.args.size(), [&](size_t i) { write_arg(node.args[i]); });
    out_ += ", ";
    write_key("kwargs");
    out_ += "{";
    for (size_t i = 0; i < node.kwargs.size(); ++i) {
      if (i > 0) out_ += ", ";
      write_key(node.kwargs[i].first);
      write_arg(node.kwargs[i].second);
    }
    out_ += "}, ";
    write_key("outputs");
    write_inline_list(node.outputs.size(), [&](size_t i) {
      out_ += "{";
      write_type_fields(node.outputs[i]);
      out_ += "}";
    });
    write_string_field("module", node.module);
    write_string_field("module_type", node.module_type);
    out_ += "}";
  }

  const Graph& graph_;
  std::string out_;
};

}  // namespace

std::string serialize_graph(const Graph& graph) {
  return GraphWriter(graph).write();
}

Status save_graph(const Graph& graph, const std::string& path) {
  Status status = write_file_atomic(path, serialize_graph(graph));
  if (!status.ok()) return status.error().with_context(fmt::format("saving graph {}", path));
  return {};
}

}  // namespace stitch::ir
