// Strict JSON reading: a SAX handler that builds an ordered_json DOM and rejects what the
// project's file formats never contain (see json_reader.h).
#include "ir/json_reader.h"

#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

namespace stitch::ir {

namespace {

using json = nlohmann::ordered_json;

class StrictDomBuilder final : public nlohmann::json_sax<json> {
 public:
  explicit StrictDomBuilder(int max_depth) : max_depth_(max_depth) {}

  bool null() override { return add(json(nullptr)); }
  bool boolean(bool value) override { return add(json(value)); }
  bool number_integer(number_integer_t value) override { return add(json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return add(json(value)); }
  bool number_float(number_float_t value, const string_t& text) override {
    // nlohmann stores an integer literal that overflows 64 bits as a float; the formats we read
    // distinguish ints from floats by the literal, so such a literal is an error, not a float.
    if (text.find_first_of(".eE") == std::string::npos)
      return fail(fmt::format("integer {} does not fit in 64 bits", text));
    if (!std::isfinite(value)) return fail(fmt::format("number {} is out of range", text));
    return add(json(value));
  }
  bool string(string_t& value) override { return add(json(std::move(value))); }
  bool binary(binary_t&) override { return fail("binary values are not JSON"); }

  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(string_t& key) override {
    if (!keys_.back().insert(key).second) return fail(fmt::format("duplicate key '{}'", key));
    pending_key_ = std::move(key);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override { return close(); }

  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    std::string what = ex.what();
    // Drop nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 2: " prefix
    // and keep the reason; the byte position says where.
    if (what.starts_with("[json.exception.")) {
      if (auto bracket = what.find("] "); bracket != std::string::npos) what.erase(0, bracket + 2);
    }
    if (what.starts_with("parse error")) {
      if (auto colon = what.find(": "); colon != std::string::npos) what.erase(0, colon + 2);
    }
    return fail(fmt::format("invalid JSON at byte {}: {}", position, what));
  }

  json take_root() { return std::move(root_); }
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }

  // Places a complete value in the current container (or as the root); returns where it lives.
  json* place(json value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    json* parent = stack_.back();
    if (parent->is_array()) {
      parent->push_back(std::move(value));
      return &parent->back();
    }
    json& slot = (*parent)[pending_key_];
    slot = std::move(value);
    return &slot;
  }

  bool add(json value) {
    place(std::move(value));
    return true;
  }

  bool open(json container) {
    if (static_cast<int>(stack_.size()) >= max_depth_)
      return fail(fmt::format("JSON nested deeper than {} levels", max_depth_));
    const bool is_object = container.is_object();
    stack_.push_back(place(std::move(container)));
    if (is_object) keys_.emplace_back();
    return true;
  }

  bool close() {
    if (stack_.back()->is_object()) keys_.pop_back();
    stack_.pop_back();
    return true;
  }

  int max_depth_;
  json root_;
  std::vector<json*> stack_;                           // open containers, innermost last
  std::vector<std::unordered_set<std::string>> keys_;  // keys seen in each open object
  std::string pending_key_;
  std::string error_;
};

}  // namespace

Result<nlohmann::ordered_json> read_json_strict(std::string_view text, int max_depth) {
  StrictDomBuilder builder(max_depth);
  bool ok = false;
  try {
    ok = json::sax_parse(text.begin(), text.end(), &builder, nlohmann::json::input_format_t::json,
                         /*strict=*/true);
  } catch (const std::exception& ex) {  // nlohmann reports through the handler; belt and braces
    return make_error("invalid JSON: {}", ex.what());
  }
  if (!ok) {
    if (builder.error().empty()) return make_error("invalid JSON");
    return Error{builder.error()};
  }
  return builder.take_root();
}

std::string_view json_type_name(const nlohmann::ordered_json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "float";
    case json::value_t::binary:
      return "binary";
    case json::value_t::discarded:
      return "discarded";
  }
  return "unknown";
}

}  // namespace stitch::ir
