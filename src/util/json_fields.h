// Reading and writing the fields of the loop's JSON files (verify.json, feedback.json, state.json,
// profile.json, ...): the few helpers every typed reader and writer needs, in one place, so that a
// missing, null or mistyped field means the same in every file. nlohmann's typed accessors throw on
// a mistyped field; these never do.
//
// A record stored as one JSON object lists its fields once, as a table, and fields_to_json and
// read_fields both walk that table, so the writer and the reader cannot drift:
//
//   constexpr std::tuple kStepFields = {JsonField{"name", &VerifyStep::name},
//                                       JsonField{"seconds", &VerifyStep::seconds}};
//   json doc = fields_to_json(step, kStepFields);
//   STITCH_TRY(read_fields(doc, step, kStepFields));
//
// A member's type says how it is spelt: a NamedEnum (util/enum_names.h) by its name (reading an
// absent or unknown name is an Error), a std::optional of one by its name or null, a
// std::optional<double> as a number or null, anything else as nlohmann spells it (read_field). A
// FiniteField is a double that may be non-finite: written as null, read back as +infinity.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/enum_names.h"
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

// doc[key] as a NamedEnum; an absent field is an Error, like an unknown name.
template <NamedEnum Enum>
Result<Enum> read_enum(const nlohmann::json& doc, const char* key) {
  return read_enum<Enum>(doc, key,
                         [](std::string_view name) { return enum_from_name<Enum>(name); });
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

// A loop file's own header, {"format": format, "version": version, ...}: an Error (bad input)
// naming `file` ("verify.json") when `doc` is not that file or not that version.
inline Status check_file_format(const nlohmann::json& doc, std::string_view file,
                                std::string_view format, int version) {
  if (!doc.is_object() || doc.value("format", "") != format)
    return make_error(ErrorKind::bad_input, "not a {} (format \"{}\")", file, format);
  if (doc.value("version", 0) != version)
    return make_error(ErrorKind::bad_input, "{} version {} (this stitchcuda reads {})", file,
                      doc.value("version", nlohmann::json()).dump(), version);
  return {};
}

// ---- Records as tables of fields ----------------------------------------------------------------

// One field of a record: its key in the JSON object and the member it is stored in.
template <class Record, class T>
struct JsonField {
  const char* key;
  T Record::*member;
};

// A double written with finite_or_null; null (or absent, or not a number) reads back as +infinity.
template <class Record>
struct FiniteField {
  const char* key;
  double Record::*member;
};

// Whether read_fields refuses a record with a field absent (or null): a file the reader itself
// wrote whole (the build cache), where a missing field means a damaged file.
enum class FieldPresence : uint8_t { optional, required };

namespace json_detail {

template <class T>
struct optional_value {
  using type = void;
};
template <class T>
struct optional_value<std::optional<T>> {
  using type = T;
};
// std::optional<E> of a NamedEnum E: its name, or null for nullopt.
template <class T>
concept OptionalNamedEnum = NamedEnum<typename optional_value<T>::type>;

template <class Record, class T>
void write_field(nlohmann::json& doc, const Record& record, const JsonField<Record, T>& field) {
  const T& value = record.*field.member;
  if constexpr (NamedEnum<T>)
    doc[field.key] = enum_name(value);
  else if constexpr (OptionalNamedEnum<T>)
    doc[field.key] = value ? nlohmann::json(enum_name(*value)) : nlohmann::json(nullptr);
  else if constexpr (std::is_same_v<T, std::optional<double>>)
    doc[field.key] = optional_number(value);
  else
    doc[field.key] = value;
}

template <class Record>
void write_field(nlohmann::json& doc, const Record& record, const FiniteField<Record>& field) {
  doc[field.key] = finite_or_null(record.*field.member);
}

inline Status check_present(const nlohmann::json& doc, const char* key, FieldPresence presence) {
  if (presence == FieldPresence::optional) return {};
  if (!doc.is_object() || !doc.contains(key) || doc[key].is_null())
    return make_error(ErrorKind::bad_input, "{}: missing", key);
  return {};
}

template <class Record, class T>
Status read_one(const nlohmann::json& doc, Record& record, const JsonField<Record, T>& field,
                FieldPresence presence) {
  STITCH_TRY(check_present(doc, field.key, presence));
  T& value = record.*field.member;
  if constexpr (NamedEnum<T>) {
    STITCH_ASSIGN_OR_RETURN(value, read_enum<T>(doc, field.key));
    return {};
  } else if constexpr (OptionalNamedEnum<T>) {
    if (auto found = doc.find(field.key); found == doc.end() || found->is_null()) return {};
    STITCH_ASSIGN_OR_RETURN(value, read_enum<typename T::value_type>(doc, field.key));
    return {};
  } else if constexpr (std::is_same_v<T, std::optional<double>>) {
    value = number_field(doc, field.key);
    return {};
  } else {
    return read_field(doc, field.key, value);
  }
}

template <class Record>
Status read_one(const nlohmann::json& doc, Record& record, const FiniteField<Record>& field,
                FieldPresence presence) {
  STITCH_TRY(check_present(doc, field.key, presence));
  record.*field.member = number_or_infinity(doc, field.key);
  return {};
}

}  // namespace json_detail

// The JSON object of `record`'s fields in the table.
template <class Record, class... Fields>
nlohmann::json fields_to_json(const Record& record, const std::tuple<Fields...>& fields) {
  nlohmann::json doc = nlohmann::json::object();
  std::apply([&](const auto&... field) { (json_detail::write_field(doc, record, field), ...); },
             fields);
  return doc;
}

// Reads the table's fields of `doc` into `record`, stopping at the first Error (it names the key).
// Optional presence: an absent or null field keeps the record's default (read_field).
template <class Record, class... Fields>
Status read_fields(const nlohmann::json& doc, Record& record, const std::tuple<Fields...>& fields,
                   FieldPresence presence = FieldPresence::optional) {
  Status status;
  std::apply(
      [&](const auto&... field) {
        ((status = json_detail::read_one(doc, record, field, presence), status.ok()) && ...);
      },
      fields);
  return status;
}

// The record `doc` holds, read with its table.
template <class Record, class... Fields>
Result<Record> record_from_json(const nlohmann::json& doc, const std::tuple<Fields...>& fields) {
  Record record{};
  STITCH_TRY(read_fields(doc, record, fields));
  return record;
}

// A JSON array of records written with their table, and the array doc[key] read back with it
// (read_array: absent or null is none; an Error names the element).
template <class Items, class... Fields>
nlohmann::json records_to_json(const Items& items, const std::tuple<Fields...>& fields) {
  return json_array(items, [&](const auto& item) { return fields_to_json(item, fields); });
}
template <class Record, class... Fields>
Result<std::vector<Record>> read_records(const nlohmann::json& doc, const char* key,
                                         const std::tuple<Fields...>& fields) {
  return read_array<Record>(
      doc, key, [&](const nlohmann::json& item) { return record_from_json<Record>(item, fields); });
}

// Runs a reader that uses nlohmann's throwing accessors: an exception becomes an Error
// "<what>: <exception>", so none leaves the reader.
template <class Read>
auto read_without_throwing(std::string_view what, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const std::exception& error) {
    return make_error("{}: {}", what, error.what());
  }
}

}  // namespace stitch
