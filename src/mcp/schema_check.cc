#include "mcp/schema_check.h"

#include <array>
#include <cmath>
#include <string_view>

#include <fmt/format.h>

namespace stitch::mcp {

using nlohmann::json;

namespace {

// Annotations are allowed anywhere: they describe, they do not constrain.
constexpr std::array<std::string_view, 17> kKnownKeywords = {
    "type",        "properties", "required", "additionalProperties",
    "enum",        "minimum",    "maximum",  "minLength",
    "maxLength",   "items",      "minItems", "maxItems",
    "description", "title",      "default",  "examples",
    "$schema"};

bool has_type(const json& value, std::string_view type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    // JSON has one number type: 3.0 is an integer to JSON Schema.
    const double number = value.is_number_float() ? value.get<double>() : 0.5;
    return std::isfinite(number) && std::floor(number) == number;
  }
  return false;
}

void check_type(const json& value, const json& type, const std::string& where,
                std::vector<std::string>& problems) {
  const json names = type.is_array() ? type : json::array({type});
  for (const auto& name : names)
    if (name.is_string() && has_type(value, name.get<std::string>())) return;
  problems.push_back(fmt::format("{}: expected {}, got {}", where, type.dump(), value.type_name()));
}

void check_object(const json& value, const json& schema, const std::string& where,
                  std::vector<std::string>& problems) {
  const json properties = schema.value("properties", json::object());
  const json required = schema.value("required", json::array());
  for (const auto& name : required)
    if (name.is_string() && !value.contains(name.get<std::string>()))
      problems.push_back(
          fmt::format("{}: missing required property \"{}\"", where, name.get<std::string>()));
  const json extra = schema.value("additionalProperties", json(true));
  for (const auto& [key, item] : value.items()) {
    const std::string at = where + "." + key;
    if (properties.contains(key)) {
      for (auto& problem : check_against_schema(item, properties[key], at))
        problems.push_back(std::move(problem));
    } else if (extra.is_boolean() && !extra.get<bool>()) {
      problems.push_back(fmt::format("{}: unknown property (allowed: {})", at, [&] {
        std::string names;
        for (const auto& [name, _] : properties.items())
          names += (names.empty() ? "" : ", ") + name;
        return names;
      }()));
    } else if (extra.is_object()) {
      for (auto& problem : check_against_schema(item, extra, at))
        problems.push_back(problem);
    }
  }
}

void check_bounds(const json& value, const json& schema, const std::string& where,
                  std::vector<std::string>& problems) {
  if (value.is_number()) {
    const double number = value.get<double>();
    if (schema.contains("minimum") && number < schema["minimum"].get<double>())
      problems.push_back(fmt::format("{}: {} is below the minimum {}", where, value.dump(),
                                     schema["minimum"].dump()));
    if (schema.contains("maximum") && number > schema["maximum"].get<double>())
      problems.push_back(fmt::format("{}: {} is above the maximum {}", where, value.dump(),
                                     schema["maximum"].dump()));
  }
  if (value.is_string()) {
    // Lengths count code points, as JSON Schema does.
    size_t length = 0;
    for (unsigned char c : value.get_ref<const std::string&>())
      length += (c & 0xC0) != 0x80;
    if (schema.contains("minLength") && length < schema["minLength"].get<size_t>())
      problems.push_back(
          fmt::format("{}: shorter than {} characters", where, schema["minLength"].get<size_t>()));
    if (schema.contains("maxLength") && length > schema["maxLength"].get<size_t>())
      problems.push_back(
          fmt::format("{}: longer than {} characters", where, schema["maxLength"].get<size_t>()));
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>())
      problems.push_back(
          fmt::format("{}: fewer than {} items", where, schema["minItems"].get<size_t>()));
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>())
      problems.push_back(
          fmt::format("{}: more than {} items", where, schema["maxItems"].get<size_t>()));
  }
}

}  // namespace

std::vector<std::string> check_against_schema(const json& value, const json& schema,
                                              const std::string& where) {
  std::vector<std::string> problems;
  if (!schema.is_object()) return problems;
  if (schema.contains("type")) {
    check_type(value, schema["type"], where, problems);
    if (!problems.empty()) return problems;  // the rest would only repeat the type's complaint
  }
  if (schema.contains("enum")) {
    bool listed = false;
    for (const auto& allowed : schema["enum"])
      listed = listed || allowed == value;
    if (!listed)
      problems.push_back(
          fmt::format("{}: {} is not one of {}", where, value.dump(), schema["enum"].dump()));
  }
  check_bounds(value, schema, where, problems);
  if (value.is_object()) check_object(value, schema, where, problems);
  if (value.is_array() && schema.contains("items"))
    for (size_t i = 0; i < value.size(); ++i)
      for (auto& problem :
           check_against_schema(value[i], schema["items"], fmt::format("{}[{}]", where, i)))
        problems.push_back(std::move(problem));
  return problems;
}

std::vector<std::string> unsupported_schema_keywords(const json& schema) {
  std::vector<std::string> unknown;
  if (!schema.is_object()) return unknown;
  for (const auto& [key, item] : schema.items()) {
    bool known = false;
    for (auto keyword : kKnownKeywords)
      known = known || key == keyword;
    if (!known) unknown.push_back(key);
  }
  const json properties = schema.value("properties", json::object());
  for (const auto& [_, property] : properties.items())
    for (auto& key : unsupported_schema_keywords(property))
      unknown.push_back(key);
  if (schema.contains("items"))
    for (auto& key : unsupported_schema_keywords(schema["items"]))
      unknown.push_back(key);
  if (schema.contains("additionalProperties") && schema["additionalProperties"].is_object())
    for (auto& key : unsupported_schema_keywords(schema["additionalProperties"]))
      unknown.push_back(key);
  return unknown;
}

}  // namespace stitch::mcp
