// util/json_fields.h: a record's field table gives its writer and its reader; how each kind of
// member is spelt (enums by name, optional numbers as null, non-finite doubles as null), what an
// absent, null or mistyped field does, and read_without_throwing.
#include "util/json_fields.h"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

namespace stitch {
namespace {

using nlohmann::json;

enum class Mode : uint8_t { fast, exact };
inline constexpr std::array<std::string_view, 2> kModeNames = {"fast", "exact"};
constexpr const auto& enum_names(Mode) {
  return kModeNames;
}

struct Sample {
  std::string name = "default";
  int count = 3;
  Mode mode = Mode::fast;
  std::optional<Mode> preferred;
  std::optional<double> share;
  double error = 0;
  std::vector<std::string> tags;
};

constexpr std::tuple kSampleFields = {
    JsonField{"name", &Sample::name},   JsonField{"count", &Sample::count},
    JsonField{"mode", &Sample::mode},   JsonField{"preferred", &Sample::preferred},
    JsonField{"share", &Sample::share}, FiniteField{"error", &Sample::error},
    JsonField{"tags", &Sample::tags}};

TEST(JsonFields, WriterAndReaderWalkTheSameTable) {
  Sample sample{"s", 7, Mode::exact, Mode::fast, 0.25, 1.5, {"a", "b"}};
  json doc = fields_to_json(sample, kSampleFields);
  EXPECT_EQ(doc, json::parse(R"({"name": "s", "count": 7, "mode": "exact", "preferred": "fast",
                                 "share": 0.25, "error": 1.5, "tags": ["a", "b"]})"));
  Sample back;
  ASSERT_TRUE(read_fields(doc, back, kSampleFields).ok());
  EXPECT_EQ(back.name, "s");
  EXPECT_EQ(back.count, 7);
  EXPECT_EQ(back.mode, Mode::exact);
  EXPECT_EQ(back.preferred, Mode::fast);
  EXPECT_EQ(back.share, 0.25);
  EXPECT_EQ(back.error, 1.5);
  EXPECT_EQ(back.tags, (std::vector<std::string>{"a", "b"}));
}

TEST(JsonFields, NullablesAndNonFiniteNumbers) {
  Sample sample;
  sample.error = std::numeric_limits<double>::infinity();
  json doc = fields_to_json(sample, kSampleFields);
  EXPECT_TRUE(doc["preferred"].is_null());
  EXPECT_TRUE(doc["share"].is_null());
  EXPECT_TRUE(doc["error"].is_null());
  Sample back;
  back.share = 1;
  ASSERT_TRUE(read_fields(doc, back, kSampleFields).ok());
  EXPECT_FALSE(back.preferred.has_value());
  EXPECT_FALSE(back.share.has_value());
  EXPECT_EQ(back.error, std::numeric_limits<double>::infinity());
}

TEST(JsonFields, AbsentFieldsKeepDefaultsButAnEnumMustBeNamed) {
  Sample back;
  Status status = read_fields(json{{"count", 9}}, back, kSampleFields);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("mode: missing"), std::string::npos);
  EXPECT_EQ(back.count, 9);

  Sample named;
  ASSERT_TRUE(read_fields(json{{"mode", "exact"}}, named, kSampleFields).ok());
  EXPECT_EQ(named.name, "default");
  EXPECT_EQ(named.count, 3);
  EXPECT_EQ(named.error, std::numeric_limits<double>::infinity());  // absent: as null
}

TEST(JsonFields, MistypedOrUnknownValuesAreErrorsNamingTheKey) {
  auto refused = [](json doc, const std::string& expected) {
    Sample back;
    Status status = read_fields(doc, back, kSampleFields);
    ASSERT_FALSE(status.ok()) << doc.dump();
    EXPECT_NE(status.error().message.find(expected), std::string::npos) << status.error().message;
    EXPECT_EQ(status.error().kind, ErrorKind::bad_input);
  };
  refused({{"mode", "fast"}, {"count", "many"}}, "count");
  refused({{"mode", "slow"}}, "mode: unknown value 'slow'");
  refused({{"mode", "fast"}, {"preferred", "slow"}}, "preferred: unknown value 'slow'");
}

TEST(JsonFields, RequiredPresenceRefusesAnAbsentOrNullField) {
  constexpr std::tuple kCountOnly = {JsonField{"count", &Sample::count}};
  Sample back;
  EXPECT_FALSE(read_fields(json::object(), back, kCountOnly, FieldPresence::required).ok());
  EXPECT_FALSE(
      read_fields(json{{"count", nullptr}}, back, kCountOnly, FieldPresence::required).ok());
  EXPECT_TRUE(read_fields(json{{"count", 2}}, back, kCountOnly, FieldPresence::required).ok());
  EXPECT_EQ(back.count, 2);
}

TEST(JsonFields, CheckFileFormatNamesTheFile) {
  EXPECT_TRUE(check_file_format({{"format", "x.f"}, {"version", 1}}, "x.json", "x.f", 1).ok());
  Status other = check_file_format({{"format", "y.f"}, {"version", 1}}, "x.json", "x.f", 1);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().message, "not a x.json (format \"x.f\")");
  EXPECT_EQ(other.error().kind, ErrorKind::bad_input);
  Status newer = check_file_format({{"format", "x.f"}, {"version", 2}}, "x.json", "x.f", 1);
  ASSERT_FALSE(newer.ok());
  EXPECT_EQ(newer.error().message, "x.json version 2 (this stitchcuda reads 1)");
  EXPECT_FALSE(check_file_format(json::array(), "x.json", "x.f", 1).ok());
}

TEST(JsonFields, ReadWithoutThrowing) {
  Result<int> thrown =
      read_without_throwing("reading x", []() -> Result<int> { throw std::runtime_error("boom"); });
  ASSERT_FALSE(thrown.ok());
  EXPECT_EQ(thrown.error().message, "reading x: boom");
  Result<int> value = read_without_throwing("reading x", []() -> Result<int> { return 4; });
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(*value, 4);
}

}  // namespace
}  // namespace stitch
