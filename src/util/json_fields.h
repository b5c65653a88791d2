// Reading and writing the fields of the loop's JSON files (verify.json, feedback.json, state.json,
// profile.json, ...): the few helpers every typed reader and writer needs, in one place, so that a
// missing, null or mistyped field means the same in every file. nlohmann's typed accessors throw on
// a mistyped field; these never do.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace stitch {

// Strict JSON has no Infinity or NaN: such values are written as null.
inline nlohmann::json finite_or_null(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}

inline nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// object[key] when it is a number; nullopt when absent, null or not a number.
inline std::optional<double> number_field(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto found = object.find(key);
  if (found == object.end() || !found->is_number()) return std::nullopt;
  return found->get<double>();
}

inline double number_or(const nlohmann::json& object, const char* key, double fallback) {
  return number_field(object, key).value_or(fallback);
}

// A number written with finite_or_null: null (or absent) reads back as +infinity.
inline double number_or_infinity(const nlohmann::json& object, const char* key) {
  return number_or(object, key, HUGE_VAL);
}

inline std::string string_or(const nlohmann::json& object, const char* key,
                             std::string fallback = "") {
  if (!object.is_object()) return fallback;
  auto found = object.find(key);
  if (found == object.end() || !found->is_string()) return fallback;
  return found->get<std::string>();
}

// A JSON array of `write(item)` for each item.
template <class Items, class Write>
nlohmann::json json_array(const Items& items, Write write) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& item : items)
    out.push_back(write(item));
  return out;
}

// Reads doc[key] into `out` when present; an absent or null field keeps `out`'s default, a field of
// the wrong type is an Error naming the key.
template <class T>
Status read_field(const nlohmann::json& doc, const char* key, T& out) {
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "{}: not inside an object", key);
  auto found = doc.find(key);
  if (found == doc.end() || found->is_null()) return {};
  try {
    out = found->get<T>();
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorKind::bad_input, "{}: {}", key, e.what());
  }
  return {};
}

// The same for a field that may be absent: present and not null sets `out`, else it is left as is.
template <class T>
Status read_field(const nlohmann::json& doc, const char* key, std::optional<T>& out) {
  if (doc.is_object() && (!doc.contains(key) || doc[key].is_null())) return {};
  T value{};
  STITCH_TRY(read_field(doc, key, value));
  out = std::move(value);
  return {};
}

// doc[key] as an enum through its `from_name` parser (verdict.h's *_from_name); an absent field is
// an Error, like an unknown name.
template <class Enum, class Parse>
Result<Enum> read_enum(const nlohmann::json& doc, const char* key, Parse from_name) {
  const std::string text = string_or(doc, key);
  if (std::optional<Enum> value = from_name(text)) return *value;
  if (text.empty()) return make_error(ErrorKind::bad_input, "{}: missing", key);
  return make_error(ErrorKind::bad_input, "{}: unknown value '{}'", key, text);
}

// Reads every element of the array doc[key] with `read` (absent or null: none); an Error names the
// key and the index of the first element `read` refuses.
template <class T, class Read>
Result<std::vector<T>> read_array(const nlohmann::json& doc, const char* key, Read read) {
  std::vector<T> out;
  auto found = doc.find(key);
  if (found == doc.end() || found->is_null()) return out;
  if (!found->is_array()) return make_error(ErrorKind::bad_input, "{}: not an array", key);
  for (size_t i = 0; i < found->size(); ++i) {
    Result<T> item = read((*found)[i]);
    if (!item.ok()) return item.error().with_context(fmt::format("{}[{}]", key, i));
    out.push_back(std::move(*item));
  }
  return out;
}

}  // namespace stitch
