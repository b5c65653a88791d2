// Op and dtype tables, tensor-type helpers, argument accessors and graph lookups (ir.h).
#include "ir/ir.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <unordered_map>

#include "util/enum_names.h"

namespace stitch::ir {

// ---- Ops --------------------------------------------------------------------------------------

namespace {

constexpr std::string_view kOpNames[] = {
#define STITCH_OP(name, aten, category) aten,
#include "ir/ops.def"
#undef STITCH_OP
    "opaque",
};

constexpr OpCategory kOpCategories[] = {
#define STITCH_OP(name, aten, category) OpCategory::category,
#include "ir/ops.def"
#undef STITCH_OP
    OpCategory::other,
};

static_assert(std::size(kOpNames) == kOpCount, "ops.def and the name table disagree");
static_assert(std::size(kOpCategories) == kOpCount, "ops.def and the category table disagree");
// Bump when ops.def changes, after checking the per-op switches (cost.cc) still cover what they
// should: adding an op is a decision, not an accident (ggml's GGML_OP_COUNT check).
static_assert(kOpCount == 199, "ops.def changed: review cost.cc and update this count");

}  // namespace

std::string_view op_name(Op op) {
  const auto index = static_cast<size_t>(op);
  return index < std::size(kOpNames) ? kOpNames[index] : std::string_view("opaque");
}

std::optional<Op> op_from_name(std::string_view name) {
  static const auto* const table = [] {
    auto* map = new std::unordered_map<std::string_view, Op>();
    for (int i = 0; i < kOpCount - 1; ++i)
      map->emplace(kOpNames[i], static_cast<Op>(i));
    return map;
  }();
  auto it = table->find(name);
  if (it == table->end()) return std::nullopt;
  return it->second;
}

std::string_view short_op_name(std::string_view full_name) {
  std::string_view name = full_name;
  if (name.starts_with("aten.")) name.remove_prefix(5);
  if (name.ends_with(".default")) name.remove_suffix(8);
  return name;
}

OpCategory op_category(Op op) {
  const auto index = static_cast<size_t>(op);
  return index < std::size(kOpCategories) ? kOpCategories[index] : OpCategory::other;
}

std::string_view op_category_name(OpCategory category) {
  static constexpr std::array<std::string_view, 16> kNames = {
      "elementwise_unary", "elementwise_binary", "elementwise_ternary", "reduction",
      "scan",              "view",               "copy",                "creation",
      "matmul",            "convolution",        "pooling",             "normalization",
      "random",            "recurrent",          "attention",           "other"};
  static_assert(kNames.size() == static_cast<size_t>(OpCategory::other) + 1);
  return enum_name(kNames, category, "other");
}

// ---- Input and param kinds ------------------------------------------------------------------

namespace {
constexpr std::array<std::string_view, 2> kInputKinds = {"user", "random"};
static_assert(kInputKinds.size() == static_cast<size_t>(InputKind::random) + 1);
constexpr std::array<std::string_view, 3> kParamKinds = {"parameter", "buffer", "constant"};
static_assert(kParamKinds.size() == static_cast<size_t>(ParamKind::constant) + 1);
}  // namespace

std::string_view input_kind_name(InputKind kind) {
  return enum_name(kInputKinds, kind, "user");
}

std::optional<InputKind> input_kind_from_name(std::string_view name) {
  return enum_from_name<InputKind>(kInputKinds, name);
}

std::string_view param_kind_name(ParamKind kind) {
  return enum_name(kParamKinds, kind, "parameter");
}

std::optional<ParamKind> param_kind_from_name(std::string_view name) {
  return enum_from_name<ParamKind>(kParamKinds, name);
}

// ---- Dtypes -------------------------------------------------------------------------------------

namespace {

struct DTypeInfo {
  std::string_view name;
  int size;
};

// Order matches enum class DType (and stitch_dtype in include/stitch/program.h).
constexpr DTypeInfo kDTypes[kDTypeCount] = {
    {"float32", 4}, {"float64", 8}, {"float16", 2}, {"bfloat16", 2}, {"int64", 8},
    {"int32", 4},   {"int16", 2},   {"int8", 1},    {"uint8", 1},    {"bool", 1},
};

}  // namespace

std::string_view dtype_name(DType dtype) {
  const auto index = static_cast<size_t>(dtype);
  return index < std::size(kDTypes) ? kDTypes[index].name : std::string_view("unknown");
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 0; i < kDTypeCount; ++i)
    if (kDTypes[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

int dtype_size(DType dtype) {
  const auto index = static_cast<size_t>(dtype);
  return index < std::size(kDTypes) ? kDTypes[index].size : 0;
}

bool is_floating(DType dtype) {
  return dtype == DType::float32 || dtype == DType::float64 || dtype == DType::float16 ||
         dtype == DType::bfloat16;
}

bool is_integral(DType dtype) {
  return dtype == DType::int64 || dtype == DType::int32 || dtype == DType::int16 ||
         dtype == DType::int8 || dtype == DType::uint8;
}

// ---- Tensor types
// --------------------------------------------------------------------------------

std::optional<int64_t> checked_numel(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    if (__builtin_mul_overflow(numel, dim, &numel)) return std::nullopt;
  }
  return numel;
}

int64_t TensorType::numel() const {
  return checked_numel(shape).value_or(std::numeric_limits<int64_t>::max());
}

int64_t TensorType::bytes() const {
  int64_t bytes = 0;
  if (__builtin_mul_overflow(numel(), static_cast<int64_t>(dtype_size(dtype)), &bytes))
    return std::numeric_limits<int64_t>::max();
  return bytes;
}

bool TensorType::is_contiguous() const {
  if (strides.size() != shape.size()) return false;
  const std::vector<int64_t> expected = contiguous_strides(shape);
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1 && strides[i] != expected[i]) return false;
  return true;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    // Saturate rather than overflow on absurd shapes; verify() reports those.
    if (shape[i] > 1 && __builtin_mul_overflow(stride, shape[i], &stride))
      stride = std::numeric_limits<int64_t>::max();
  }
  return strides;
}

std::string format_tensor_type(const TensorType& type) {
  return fmt::format("[{}] {}", fmt::join(type.shape, ", "), dtype_name(type.dtype));
}

// ---- Arguments
// -----------------------------------------------------------------------------------

std::optional<int64_t> Arg::as_int() const {
  if (const auto* i = std::get_if<int64_t>(&value)) return *i;
  if (const auto* b = std::get_if<bool>(&value)) return *b ? 1 : 0;
  return std::nullopt;
}

std::optional<double> Arg::as_double() const {
  if (const auto* d = std::get_if<double>(&value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  return std::nullopt;
}

std::optional<bool> Arg::as_bool() const {
  if (const auto* b = std::get_if<bool>(&value)) return *b;
  return std::nullopt;
}

std::optional<std::vector<int64_t>> Arg::as_int_list() const {
  if (const auto* i = std::get_if<int64_t>(&value)) return std::vector<int64_t>{*i};
  const ArgList* items = list();
  if (items == nullptr) return std::nullopt;
  std::vector<int64_t> ints;
  ints.reserve(items->size());
  for (const Arg& item : *items) {
    const auto* i = std::get_if<int64_t>(&item.value);
    if (i == nullptr) return std::nullopt;
    ints.push_back(*i);
  }
  return ints;
}

const std::string* Arg::as_string() const {
  return std::get_if<std::string>(&value);
}

std::optional<DType> Arg::as_dtype() const {
  if (const auto* d = std::get_if<DType>(&value)) return *d;
  return std::nullopt;
}

bool Arg::operator==(const Arg& other) const {
  if (value.index() != other.value.index()) return false;
  if (const auto* d = std::get_if<double>(&value)) {
    const double e = std::get<double>(other.value);
    if (std::isnan(*d) && std::isnan(e)) return true;
    return std::bit_cast<uint64_t>(*d) == std::bit_cast<uint64_t>(e);
  }
  return value == other.value;
}

// ---- Nodes and graphs
// ----------------------------------------------------------------------------

const Arg* Node::kwarg(std::string_view name) const {
  for (const auto& [key, arg] : kwargs)
    if (key == name) return &arg;
  return nullptr;
}

const Arg* Node::arg_or_kwarg(size_t index, std::string_view name) const {
  if (index < args.size()) return &args[index];
  return kwarg(name);
}

const TensorType& Graph::type_of(const ValueRef& ref) const {
  static const TensorType kInvalid{};  // for invalid refs, so that a bad graph cannot crash us
  const auto index = static_cast<size_t>(ref.index);
  switch (ref.kind) {
    case ValueRef::Kind::input:
      return ref.index >= 0 && index < inputs.size() ? inputs[index].type : kInvalid;
    case ValueRef::Kind::param:
      return ref.index >= 0 && index < params.size() ? params[index].type : kInvalid;
    case ValueRef::Kind::node:
      if (ref.index < 0 || index >= nodes.size()) return kInvalid;
      if (ref.out < 0 || static_cast<size_t>(ref.out) >= nodes[index].outputs.size())
        return kInvalid;
      return nodes[index].outputs[static_cast<size_t>(ref.out)];
  }
  return kInvalid;
}

std::string Graph::name_of(const ValueRef& ref) const {
  const auto index = static_cast<size_t>(ref.index);
  switch (ref.kind) {
    case ValueRef::Kind::input:
      if (ref.index >= 0 && index < inputs.size()) return inputs[index].name;
      return fmt::format("<bad input ref {}>", ref.index);
    case ValueRef::Kind::param:
      if (ref.index >= 0 && index < params.size()) return params[index].name;
      return fmt::format("<bad param ref {}>", ref.index);
    case ValueRef::Kind::node:
      if (ref.index < 0 || index >= nodes.size())
        return fmt::format("<bad node ref {}>", ref.index);
      if (ref.out == 0) return nodes[index].id;
      return fmt::format("{}.{}", nodes[index].id, ref.out);
  }
  return "<bad ref>";
}

int Graph::find_node(std::string_view id) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].id == id) return static_cast<int>(i);
  return -1;
}

}  // namespace stitch::ir
