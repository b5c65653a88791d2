// Parsing of slots.json and the dtype/distribution tables; see spec.h.
#include "runner/spec.h"

#include <array>
#include <charconv>

#include <nlohmann/json.hpp>

#include "util/fs.h"

namespace stitch::runner {
namespace {

using nlohmann::json;

// Same order as stitch_dtype, checked below.
constexpr std::array<DTypeInfo, 10> kDTypes = {{
    {"float32", STITCH_FLOAT32, 4, true},
    {"float64", STITCH_FLOAT64, 8, true},
    {"float16", STITCH_FLOAT16, 2, true},
    {"bfloat16", STITCH_BFLOAT16, 2, true},
    {"int64", STITCH_INT64, 8, false},
    {"int32", STITCH_INT32, 4, false},
    {"int16", STITCH_INT16, 2, false},
    {"int8", STITCH_INT8, 1, false},
    {"uint8", STITCH_UINT8, 1, false},
    {"bool", STITCH_BOOL, 1, false},
}};
static_assert(kDTypes.size() == STITCH_BOOL + 1, "one entry per stitch_dtype");

Result<double> parse_number(std::string_view text, std::string_view what) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size())
    return make_error("{}: '{}' is not a number", what, text);
  return value;
}

Result<TensorSpec> parse_tensor(const json& entry, bool is_input, std::string_view where) {
  if (!entry.is_object()) return make_error("{}: expected an object", where);
  TensorSpec tensor;
  tensor.name = entry.value("name", std::string());
  if (!is_input) tensor.state = entry.value("state", std::string());
  auto dtype = dtype_from_name(entry.value("dtype", std::string()));
  if (!dtype) return make_error("{}: unknown dtype {}", where, entry.value("dtype", json()).dump());
  tensor.dtype = dtype->dtype;
  if (!entry.contains("shape") || !entry["shape"].is_array())
    return make_error("{}: missing shape", where);
  for (const auto& dim : entry["shape"]) {
    if (!dim.is_number_integer() || dim.get<int64_t>() < 0)
      return make_error("{}: shape must hold non-negative integers", where);
    tensor.shape.push_back(dim.get<int64_t>());
  }
  if (tensor.shape.size() > STITCH_MAX_RANK)
    return make_error("{}: rank {} exceeds {}", where, tensor.shape.size(), STITCH_MAX_RANK);
  // Sizes and contiguous strides are products of the dimensions: they must fit in 64 bits.
  int64_t span = 1;
  for (int64_t dim : tensor.shape)
    if (__builtin_mul_overflow(span, std::max<int64_t>(dim, 1), &span))
      return make_error("{}: shape too large (its size overflows 64 bits)", where);
  if (entry.contains("strides") && entry["strides"].is_array()) {
    for (const auto& stride : entry["strides"]) {
      if (!stride.is_number_integer() || stride.get<int64_t>() < 0)
        return make_error("{}: strides must hold non-negative integers", where);
      tensor.strides.push_back(stride.get<int64_t>());
    }
    if (tensor.strides.size() != tensor.shape.size())
      return make_error("{}: {} strides for rank {}", where, tensor.strides.size(),
                        tensor.shape.size());
  } else {
    tensor.strides.assign(tensor.shape.size(), 1);
    for (int i = static_cast<int>(tensor.shape.size()) - 2; i >= 0; --i)
      tensor.strides[i] = tensor.strides[i + 1] * std::max<int64_t>(tensor.shape[i + 1], 1);
  }
  if (is_input) {
    auto distribution = parse_distribution(entry.value("distribution", std::string("randn")));
    if (!distribution) return distribution.error().with_context(std::string(where));
    tensor.distribution = *distribution;
  }
  return tensor;
}

Result<IpcRef> parse_ref(const json& entry, std::string_view where) {
  if (!entry.is_object() || !entry.contains("ipc_handle") || !entry["ipc_handle"].is_string())
    return make_error("{}: missing ipc_handle", where);
  IpcRef ref;
  ref.handle_hex = entry["ipc_handle"].get<std::string>();
  STITCH_TRY(parse_ipc_handle(ref.handle_hex));
  const json& offset = entry.contains("offset_bytes") ? entry["offset_bytes"] : json(0);
  if (!offset.is_number_integer() || offset.get<int64_t>() < 0)
    return make_error("{}: offset_bytes must be a non-negative integer", where);
  ref.offset_bytes = offset.get<uint64_t>();
  return ref;
}

Result<std::vector<SlotSet>> parse_sets(const json& root, const char* key, size_t n_inputs,
                                        size_t n_outputs) {
  std::vector<SlotSet> sets;
  if (!root.contains(key)) return sets;
  if (!root[key].is_array()) return make_error("{}: expected an array", key);
  for (size_t i = 0; i < root[key].size(); ++i) {
    const json& entry = root[key][i];
    std::string where = fmt::format("{}[{}]", key, i);
    if (!entry.is_object() || !entry.contains("inputs") || !entry.contains("outputs") ||
        !entry["inputs"].is_array() || !entry["outputs"].is_array())
      return make_error("{}: needs arrays inputs and outputs", where);
    if (entry["inputs"].size() != n_inputs || entry["outputs"].size() != n_outputs)
      return make_error("{}: {} inputs and {} outputs, expected {} and {}", where,
                        entry["inputs"].size(), entry["outputs"].size(), n_inputs, n_outputs);
    SlotSet set;
    for (size_t j = 0; j < n_inputs; ++j) {
      STITCH_ASSIGN_OR_RETURN(
          IpcRef ref, parse_ref(entry["inputs"][j], fmt::format("{}.inputs[{}]", where, j)));
      set.inputs.push_back(std::move(ref));
    }
    for (size_t j = 0; j < n_outputs; ++j) {
      STITCH_ASSIGN_OR_RETURN(
          IpcRef ref, parse_ref(entry["outputs"][j], fmt::format("{}.outputs[{}]", where, j)));
      set.outputs.push_back(std::move(ref));
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

}  // namespace

std::optional<DTypeInfo> dtype_from_name(std::string_view name) {
  for (const auto& info : kDTypes)
    if (info.name == name) return info;
  return std::nullopt;
}

const DTypeInfo& dtype_info(stitch_dtype dtype) {
  return kDTypes[static_cast<size_t>(dtype) < kDTypes.size() ? dtype : 0];
}

Result<Distribution> parse_distribution(std::string_view text) {
  Distribution distribution;
  if (text == "randn") return distribution;
  if (text == "rand") {
    distribution.kind = DistributionKind::uniform;
    return distribution;
  }
  if (text == "fixed" || text == "unknown") {
    distribution.kind = DistributionKind::fixed;
    return distribution;
  }
  if (text.starts_with("randint:")) {
    std::string_view rest = text.substr(8);
    size_t colon = rest.find(':');
    if (colon == std::string_view::npos)
      return make_error("distribution '{}': expected randint:LOW:HIGH", text);
    distribution.kind = DistributionKind::randint;
    STITCH_ASSIGN_OR_RETURN(distribution.a, parse_number(rest.substr(0, colon), "randint low"));
    STITCH_ASSIGN_OR_RETURN(distribution.b, parse_number(rest.substr(colon + 1), "randint high"));
    if (distribution.b <= distribution.a) return make_error("distribution '{}': empty range", text);
    return distribution;
  }
  if (text.starts_with("bernoulli:")) {
    distribution.kind = DistributionKind::bernoulli;
    STITCH_ASSIGN_OR_RETURN(distribution.a, parse_number(text.substr(10), "bernoulli p"));
    if (distribution.a < 0 || distribution.a > 1)
      return make_error("distribution '{}': p outside [0, 1]", text);
    return distribution;
  }
  return make_error("unknown distribution '{}'", text);
}

std::string distribution_text(const Distribution& distribution) {
  switch (distribution.kind) {
    case DistributionKind::uniform:
      return "rand";
    case DistributionKind::normal:
      return "randn";
    case DistributionKind::randint:
      return fmt::format("randint:{}:{}", distribution.a, distribution.b);
    case DistributionKind::bernoulli:
      return fmt::format("bernoulli:{}", distribution.a);
    case DistributionKind::fixed:
      return "fixed";
  }
  return "unknown";
}

int64_t TensorSpec::numel() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

uint64_t TensorSpec::storage_bytes() const {
  if (numel() == 0) return 0;
  int64_t last = 0;
  for (size_t i = 0; i < shape.size(); ++i)
    last += (shape[i] - 1) * strides[i];
  return static_cast<uint64_t>(last + 1) * dtype_info(dtype).size;
}

bool TensorSpec::contiguous() const {
  int64_t expected = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expected) return false;
    expected *= shape[i];
  }
  return true;
}

stitch_tensor TensorSpec::to_abi(void* data) const {
  stitch_tensor tensor{};
  tensor.data = data;
  tensor.dtype = dtype;
  tensor.rank = static_cast<int32_t>(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    tensor.shape[i] = shape[i];
    tensor.strides[i] = strides[i];
  }
  return tensor;
}

Result<std::vector<uint8_t>> parse_ipc_handle(std::string_view hex) {
  if (hex.size() != 2 * kIpcHandleBytes)
    return make_error("ipc_handle: expected {} hex characters, got {}", 2 * kIpcHandleBytes,
                      hex.size());
  std::vector<uint8_t> bytes(kIpcHandleBytes);
  for (int i = 0; i < kIpcHandleBytes; ++i) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, value, 16);
    if (ec != std::errc() || end != hex.data() + 2 * i + 2)
      return make_error("ipc_handle: not hexadecimal at character {}", 2 * i);
    bytes[i] = static_cast<uint8_t>(value);
  }
  return bytes;
}

namespace {
Result<RunSpec> parse_slots_json(std::string_view json_text, bool self_test,
                                 int self_test_check_sets) {
  json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) return make_error("not a JSON object");
  if (root.value("version", 0) != 1)
    return make_error("version {} (this runner reads version 1)",
                      root.value("version", json()).dump());
  RunSpec spec;
  spec.self_test = self_test;
  spec.device = root.value("device", 0);
  for (const char* key : {"params", "inputs", "outputs"})
    if (root.contains(key) && !root[key].is_array())
      return make_error("{}: expected an array", key);
  if (root.contains("params")) {
    for (size_t i = 0; i < root["params"].size(); ++i) {
      std::string where = fmt::format("params[{}]", i);
      STITCH_ASSIGN_OR_RETURN(TensorSpec param, parse_tensor(root["params"][i], false, where));
      spec.params.push_back(std::move(param));
      if (!self_test) {
        STITCH_ASSIGN_OR_RETURN(IpcRef ref, parse_ref(root["params"][i], where));
        spec.param_refs.push_back(std::move(ref));
      }
    }
  }
  if (root.contains("inputs"))
    for (size_t i = 0; i < root["inputs"].size(); ++i) {
      STITCH_ASSIGN_OR_RETURN(TensorSpec input,
                              parse_tensor(root["inputs"][i], true, fmt::format("inputs[{}]", i)));
      spec.inputs.push_back(std::move(input));
    }
  if (!root.contains("outputs") || root["outputs"].empty())
    return make_error("outputs: at least one output is needed");
  for (size_t i = 0; i < root["outputs"].size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(TensorSpec output,
                            parse_tensor(root["outputs"][i], false, fmt::format("outputs[{}]", i)));
    spec.outputs.push_back(std::move(output));
  }
  if (self_test) {
    spec.check_sets.assign(std::max(self_test_check_sets, 1), SlotSet{});
    return spec;
  }
  STITCH_ASSIGN_OR_RETURN(spec.check_sets,
                          parse_sets(root, "check_sets", spec.inputs.size(), spec.outputs.size()));
  STITCH_ASSIGN_OR_RETURN(spec.spot_slots,
                          parse_sets(root, "spot_slots", spec.inputs.size(), spec.outputs.size()));
  if (spec.check_sets.empty()) return make_error("check_sets: at least one set is needed");
  return spec;
}
}  // namespace

Result<RunSpec> parse_slots(std::string_view json_text, bool self_test, int self_test_check_sets) {
  // nlohmann's accessors throw on a mistyped field; no exception leaves this function.
  try {
    return parse_slots_json(json_text, self_test, self_test_check_sets);
  } catch (const std::exception& error) {
    return make_error("malformed slots: {}", error.what());
  }
}

Result<RunSpec> load_slots(const std::filesystem::path& path, bool self_test,
                           int self_test_check_sets) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(path));
  auto spec = parse_slots(text, self_test, self_test_check_sets);
  if (!spec) return spec.error().with_context(path.string());
  return spec;
}

RunSpec default_self_test_spec(int check_sets) {
  RunSpec spec;
  spec.self_test = true;
  constexpr int64_t rows = 4096, features = 1024;
  TensorSpec vector{"", STITCH_FLOAT32, {features}, {1}, {}};
  vector.name = "scale";
  spec.params.push_back(vector);
  vector.name = "shift";
  spec.params.push_back(vector);
  TensorSpec matrix{"x", STITCH_FLOAT32, {rows, features}, {features, 1}, {}};
  spec.inputs.push_back(matrix);
  matrix.name = "y";
  spec.outputs.push_back(matrix);
  spec.check_sets.assign(std::max(check_sets, 1), SlotSet{});
  return spec;
}

}  // namespace stitch::runner
