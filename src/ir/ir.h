// The graph IR: one header for the op enum, values, nodes and the graph (STYLE.md item 1).
// Loaded from graph.json (docs/graph-format.md), verified after loading and after every pass.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "util/result.h"

namespace stitch::ir {

// ---- Ops --------------------------------------------------------------------------------------
// The core ATen ops the project knows, one line each in ops.def:
// STITCH_OP(enum_name, "aten.name.overload", category).
// Anything else loads as Op::opaque with its name kept in Node::op_name.
enum class Op : uint16_t {
#define STITCH_OP(name, aten, category) name,
#include "ir/ops.def"
#undef STITCH_OP
  opaque,
  count_
};
inline constexpr int kOpCount = static_cast<int>(Op::count_);  // opaque included

std::string_view op_name(Op op);                   // "aten.relu.default"; "opaque" for Op::opaque
std::optional<Op> op_from_name(std::string_view);  // nullopt when not in the table
// "aten.relu.default" -> "relu", "aten.add.Tensor" -> "add.Tensor", other names unchanged.
std::string_view short_op_name(std::string_view full_name);

// What kind of work an op does, for the Planner and the cost model. `view` ops alias their input
// and move no data; `scan` is cumsum-like; `creation` makes a tensor from scalars (full, arange).
enum class OpCategory : uint8_t {
  elementwise_unary,
  elementwise_binary,
  elementwise_ternary,
  reduction,
  scan,
  view,
  copy,  // data movement without arithmetic: clone, cat, pad, gather, index, ...
  creation,
  matmul,
  convolution,
  pooling,
  normalization,  // batch/layer/group norm and softmax
  random,
  recurrent,
  attention,
  other,  // also Op::opaque
};
OpCategory op_category(Op op);
std::string_view op_category_name(OpCategory category);  // "elementwise_unary", ...
inline bool is_view(Op op) {
  return op_category(op) == OpCategory::view;
}

// ---- Dtypes -------------------------------------------------------------------------------------
enum class DType : uint8_t {
  float32,
  float64,
  float16,
  bfloat16,
  int64,
  int32,
  int16,
  int8,
  uint8,
  boolean
};
inline constexpr int kDTypeCount = 10;

std::string_view dtype_name(DType dtype);  // "float32", ... "bool" (the graph.json spelling)
std::optional<DType> dtype_from_name(std::string_view name);
int dtype_size(DType dtype);  // bytes per element
bool is_floating(DType dtype);
bool is_integral(DType dtype);  // int and uint types, bool excluded

// ---- Tensor types
// --------------------------------------------------------------------------------
struct TensorType {
  std::vector<int64_t> shape;
  DType dtype = DType::float32;
  std::vector<int64_t> strides;  // in elements, same rank as shape

  // Both saturate at INT64_MAX instead of overflowing (verify() rejects such shapes).
  int64_t numel() const;
  int64_t bytes() const;
  int rank() const { return static_cast<int>(shape.size()); }
  bool is_contiguous() const;  // strides equal contiguous_strides(shape), ignoring size-1 dims
  bool operator==(const TensorType&) const = default;
};

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);
// Product of the dims; nullopt when a dim is negative or the product overflows int64.
std::optional<int64_t> checked_numel(const std::vector<int64_t>& shape);
// "[4096, 393216] float32"
std::string format_tensor_type(const TensorType& type);

// ---- Values and arguments
// --------------------------------------------------------------------------- A reference to a
// value: graph input `index`, param `index` (into Graph::params), or output `out` of node `index`
// (into Graph::nodes). Names are resolved to indices when loading.
struct ValueRef {
  enum class Kind : uint8_t { input, param, node };
  Kind kind = Kind::node;
  int32_t index = 0;
  int32_t out = 0;
  bool operator==(const ValueRef&) const = default;
};

// Torch enums we carry through without interpreting (layout, memory format, device).
struct EnumArg {
  enum class Kind : uint8_t { device, other };
  Kind kind = Kind::other;
  std::string value;  // "cpu", "torch.contiguous_format"
  bool operator==(const EnumArg&) const = default;
};

struct Arg;
using ArgList = std::vector<Arg>;

// One argument of a node: None, bool, int, float, string, dtype, enum, value reference, or list.
struct Arg {
  std::variant<std::monostate, bool, int64_t, double, std::string, DType, EnumArg, ValueRef,
               ArgList>
      value;

  bool is_none() const { return std::holds_alternative<std::monostate>(value); }
  bool is_ref() const { return std::holds_alternative<ValueRef>(value); }
  bool is_list() const { return std::holds_alternative<ArgList>(value); }
  const ValueRef* ref() const { return std::get_if<ValueRef>(&value); }
  const ArgList* list() const { return std::get_if<ArgList>(&value); }
  std::optional<int64_t> as_int() const;    // int (or bool)
  std::optional<double> as_double() const;  // float or int
  std::optional<bool> as_bool() const;
  std::optional<std::vector<int64_t>> as_int_list() const;  // a list of ints (or one int)
  const std::string* as_string() const;
  std::optional<DType> as_dtype() const;
  // Structural equality: floats compare by bit pattern, except that every NaN equals every NaN,
  // so that a parsed graph compares equal to its re-parsed serialization.
  bool operator==(const Arg& other) const;
};

// ---- Graph
// ---------------------------------------------------------------------------------------
enum class InputKind : uint8_t { user, random };
enum class ParamKind : uint8_t { parameter, buffer, constant };
// graph.json's spelling of the kinds ("user", "random"; "parameter", "buffer", "constant").
std::string_view input_kind_name(InputKind kind);
std::optional<InputKind> input_kind_from_name(std::string_view name);
std::string_view param_kind_name(ParamKind kind);
std::optional<ParamKind> param_kind_from_name(std::string_view name);

struct Input {
  std::string name;
  InputKind kind = InputKind::user;
  TensorType type;
  std::string distribution;  // "rand", "randn", "randint:0:10", "bernoulli:0.5", "fixed", "unknown"
  std::string source_op;     // random inputs: the ATen op that produced it
  bool operator==(const Input&) const = default;
};

struct Param {
  std::string name;  // safetensors key
  ParamKind kind = ParamKind::parameter;
  TensorType type;
  bool operator==(const Param&) const = default;
};

struct Node {
  std::string id;
  Op op = Op::opaque;
  std::string op_name;  // full ATen name; the only record of the op when op == Op::opaque
  std::vector<Arg> args;
  std::vector<std::pair<std::string, Arg>> kwargs;  // in file order
  std::vector<TensorType> outputs;                  // empty for ops that return nothing
  std::string module;                               // nn.Module path, e.g. "network.0"
  std::string module_type;                          // e.g. "torch.nn.modules.linear.Linear"

  const Arg* kwarg(std::string_view name) const;
  // args[index] if present, else kwargs[name] if present, else nullptr (ATen schemas let most
  // arguments come either way).
  const Arg* arg_or_kwarg(size_t index, std::string_view name) const;
  bool operator==(const Node&) const = default;
};

struct TaskInfo {
  std::string name;  // "19_ReLU"
  std::string file;  // file name of the task
  std::string sha256;
  std::string constants_json;  // module-level constants, kept as a JSON object text
  bool operator==(const TaskInfo&) const = default;
};

struct Graph {
  int version = 1;
  TaskInfo task;
  std::string torch_version;
  bool training = true;
  std::vector<Input> inputs;
  std::vector<Param> params;
  std::vector<Node> nodes;
  // forward's outputs, then the values of the buffers it updates (graph.json `state_updates`):
  // the last state_params.size() outputs are the new values of these buffer params, in order.
  std::vector<ValueRef> outputs;
  std::vector<std::string> state_params;

  size_t user_output_count() const { return outputs.size() - state_params.size(); }
  // The type of a value; the reference must be valid (see verify()).
  const TensorType& type_of(const ValueRef& ref) const;
  // Human-readable name of a value: the input name, param name, or "node_id" / "node_id.1".
  // Works on unverified graphs too ("<bad node ref 7>").
  std::string name_of(const ValueRef& ref) const;
  // Index of the node with this id, or -1. Linear: build a map for repeated lookups.
  int find_node(std::string_view id) const;
  bool operator==(const Graph&) const = default;
};

// ---- Operations on graphs
// --------------------------------------------------------------------------- Structural checks:
// unique node ids, references point to earlier values and existing outputs, shapes/strides
// consistent, outputs valid. Returns the first problem found, naming the node.
Status verify(const Graph& graph);

// graph.json text ↔ Graph. parse_* and load_* verify; errors name the file and the offending
// node/field ("graph.json: nodes[3] (id 'addmm'): args[0]: refers to unknown node 'x'").
// Never crashes or throws on malformed input.
Result<Graph> parse_graph(std::string_view json_text, std::string_view source_name = "graph.json");
Result<Graph> load_graph(const std::string& path);
// Deterministic JSON: top-level keys two-space indented, one input/param/node per line. Floats are
// written shortest-round-trip with a decimal point or exponent, so parse(serialize(g)) == g.
std::string serialize_graph(const Graph& graph);
Status save_graph(const Graph& graph, const std::string& path);  // atomic

}  // namespace stitch::ir
