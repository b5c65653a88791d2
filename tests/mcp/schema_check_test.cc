// check_against_schema over the keywords the tools declare, each one shown to reject what it
// should and accept the rest; keywords outside the subset are named.
#include "mcp/schema_check.h"

#include <gtest/gtest.h>

namespace stitch::mcp {
namespace {

using nlohmann::json;

const json kSchema = json::parse(R"({
  "type": "object",
  "properties": {
    "task": {"type": "string", "minLength": 1, "maxLength": 5},
    "seed": {"type": "integer", "minimum": 0, "maximum": 10},
    "track": {"type": "string", "enum": ["fp32", "tf32"]},
    "program": {"type": ["string", "array"], "items": {"type": "string"}, "minItems": 1},
    "ratio": {"type": "number"},
    "flag": {"type": "boolean"}
  },
  "required": ["task"],
  "additionalProperties": false
})");

std::vector<std::string> check(const char* text) {
  return check_against_schema(json::parse(text), kSchema);
}

TEST(SchemaCheck, AcceptsWhatFits) {
  EXPECT_TRUE(check(R"({"task":"a.py"})").empty());
  EXPECT_TRUE(check(R"({"task":"ab","seed":3,"track":"tf32","program":["x"],"ratio":0.5,)"
                    R"("flag":true})")
                  .empty());
  EXPECT_TRUE(check(R"({"task":"a","seed":3.0,"program":"x.cu"})").empty());  // 3.0 is an integer
}

TEST(SchemaCheck, NamesEachViolation) {
  auto problems = check(R"({"seed":-1,"track":"fp64","extra":1})");
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_NE(problems[0].find("missing required property \"task\""), std::string::npos);
  std::string all;
  for (const auto& problem : problems)
    all += problem + "\n";
  EXPECT_NE(all.find("arguments.seed: -1 is below the minimum 0"), std::string::npos) << all;
  EXPECT_NE(all.find("arguments.track"), std::string::npos) << all;
  EXPECT_NE(all.find("arguments.extra: unknown property"), std::string::npos) << all;
}

TEST(SchemaCheck, TypesLengthsItemsAndBounds) {
  EXPECT_EQ(check(R"({"task":7})").size(), 1u);
  EXPECT_EQ(check(R"({"task":""})").size(), 1u);
  EXPECT_EQ(check(R"({"task":"toolong"})").size(), 1u);
  EXPECT_EQ(check(R"({"task":"a","seed":2.5})").size(), 1u);
  EXPECT_EQ(check(R"({"task":"a","seed":11})").size(), 1u);
  EXPECT_EQ(check(R"({"task":"a","program":[]})").size(), 1u);
  EXPECT_EQ(check(R"({"task":"a","program":[1]})").size(), 1u);
  EXPECT_EQ(check(R"({"task":"a","program":{}})").size(), 1u);
  EXPECT_EQ(check(R"({"task":"a","flag":"yes"})").size(), 1u);
  EXPECT_EQ(check(R"([1])").size(), 1u);
}

TEST(SchemaCheck, UnsupportedKeywordsAreNamed) {
  EXPECT_TRUE(unsupported_schema_keywords(kSchema).empty());
  json schema = kSchema;
  schema["properties"]["task"]["pattern"] = "^a";
  schema["oneOf"] = json::array();
  auto unknown = unsupported_schema_keywords(schema);
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0], "oneOf");
  EXPECT_EQ(unknown[1], "pattern");
}

}  // namespace
}  // namespace stitch::mcp
