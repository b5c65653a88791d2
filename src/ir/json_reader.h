// Strict JSON reading for files that come from outside the process (graph.json, safetensors
// headers): text → nlohmann::ordered_json without exceptions, keeping object keys in file order.
// Stricter than nlohmann::json::parse where silent acceptance would hide a broken file: duplicate
// keys, integers too large for 64 bits (nlohmann would turn them into floats), non-finite numbers
// and nesting deeper than a limit (so hostile input cannot exhaust the stack) are errors.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace stitch::ir {

inline constexpr int kDefaultMaxJsonDepth = 64;

// Errors read "invalid JSON at byte 17: <reason>" or "duplicate key 'x'".
Result<nlohmann::ordered_json> read_json_strict(std::string_view text,
                                                int max_depth = kDefaultMaxJsonDepth);

// Name of a JSON value's type for error messages: "object", "array", "string", "integer", ...
std::string_view json_type_name(const nlohmann::ordered_json& value);

}  // namespace stitch::ir
