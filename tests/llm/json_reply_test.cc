// JSON answers (src/llm/json_reply.h): a table of malformed replies that repair must read, ones it
// must refuse, and the single re-ask with the parse error.
#include "llm/json_reply.h"

#include <gtest/gtest.h>

#include "llm/scripted_chat_client.h"

namespace stitch::llm {
namespace {

using nlohmann::json;
using testing::ScriptedChatClient;
using testing::text_reply;

struct JsonCase {
  const char* name;
  std::string reply;
  json expected;
  bool repaired;
};
void PrintTo(const JsonCase& c, std::ostream* os) {
  *os << c.name;
}

const json kPlan = {{"subtasks", json::array({{{"id", "s1"}, {"fused", true}}})},
                    {"note", nullptr}};

std::vector<JsonCase> json_cases() {
  return {
      {"bare", R"({"subtasks": [{"id": "s1", "fused": true}], "note": null})", kPlan, false},
      {"json_fence_with_prose",
       "Here is my plan:\n```json\n{\"subtasks\": [{\"id\": \"s1\", \"fused\": true}], \"note\": "
       "null}\n```\nLet me know.",
       kPlan, false},
      {"unlabelled_fence", "```\n{\"a\": [1, 2]}\n```", json{{"a", {1, 2}}}, false},
      {"prose_then_object", "The plan is {\"a\": 1} and that is all.", json{{"a", 1}}, false},
      {"trailing_commas", R"({"subtasks": [{"id": "s1", "fused": true,},], "note": null,})", kPlan,
       true},
      {"comments",
       "{\n  // the only subtask\n  \"subtasks\": [{\"id\": \"s1\", /* yes */ \"fused\": "
       "true}],\n  # python style\n  \"note\": null\n}",
       kPlan, true},
      {"single_quotes", R"({'subtasks': [{'id': 's1', 'fused': true}], 'note': null})", kPlan,
       true},
      {"single_quotes_with_inner_quote", R"({'text': 'say "hi" and it\'s done'})",
       json{{"text", "say \"hi\" and it's done"}}, true},
      {"python_literals", R"({"subtasks": [{"id": "s1", "fused": True}], "note": None})", kPlan,
       true},
      {"truncated_brackets", R"({"subtasks": [{"id": "s1", "fused": true}], "note": null)", kPlan,
       true},
      {"truncated_in_string", R"({"subtasks": [{"id": "s1)", json{{"subtasks", {{{"id", "s1"}}}}},
       true},
      {"truncated_after_key", R"({"a": 1, "b":)", json{{"a", 1}, {"b", nullptr}}, true},
      {"truncated_after_comma", "{\"a\": [1, 2,", json{{"a", {1, 2}}}, true},
      {"strings_keep_slashes_and_hashes", R"({"url": "http://x/#y", "c": "/* no */"})",
       json{{"url", "http://x/#y"}, {"c", "/* no */"}}, false},
  };
}

class ReadJsonReply : public ::testing::TestWithParam<JsonCase> {};

TEST_P(ReadJsonReply, RepairsWhatItCan) {
  auto reading = read_json_reply(GetParam().reply);
  ASSERT_TRUE(reading.ok()) << reading.error().message;
  EXPECT_EQ(reading->value, GetParam().expected);
  EXPECT_EQ(reading->repaired, GetParam().repaired);
}

INSTANTIATE_TEST_SUITE_P(Table, ReadJsonReply, ::testing::ValuesIn(json_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ReadJsonReply, RefusesWhatRepairCannotMend) {
  auto none = read_json_reply("I would fuse the GEMM with the bias.");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "the reply holds no JSON object");
  auto garbled = read_json_reply("{\"a\": 1 \"b\": 2}");  // a missing comma is not guessed
  ASSERT_FALSE(garbled.ok());
  EXPECT_NE(garbled.error().message.find("parse error"), std::string::npos)
      << garbled.error().message;
}

TEST(RepairJsonText, LeavesValidJsonAlone) {
  const std::string valid = R"({"a": [1, {"b": "c, ]"}], "d": "it's"})";
  EXPECT_EQ(repair_json_text(valid), valid);
}

ChatRequest question() {
  ChatRequest request;
  request.model = "m";
  request.messages = {{Role::user, "plan it", {}, {}}};
  return request;
}

TEST(AskJson, ReasksOnceWithTheParseError) {
  ScriptedChatClient client(
      {text_reply("{\"a\": 1 \"b\": 2}"), text_reply("{\"a\": 1, \"b\": 2}")});
  auto exchange = ask_json(client, question());
  ASSERT_TRUE(exchange.ok()) << exchange.error().message;
  ASSERT_TRUE(exchange->value);
  EXPECT_EQ(*exchange->value, json({{"a", 1}, {"b", 2}}));
  EXPECT_TRUE(exchange->reasked);
  EXPECT_EQ(exchange->replies.size(), 2u);
  EXPECT_EQ(exchange->usage.prompt_tokens, 200);
  ASSERT_EQ(client.requests.size(), 2u);
  const std::vector<ChatMessage>& second = client.requests[1].messages;
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[1].role, Role::assistant);
  EXPECT_EQ(second[1].content, "{\"a\": 1 \"b\": 2}");
  EXPECT_EQ(second[2].role, Role::user);
  EXPECT_NE(second[2].content.find("parse error"), std::string::npos) << second[2].content;
}

TEST(AskJson, ValidatorProblemsAreReaskedToo) {
  ScriptedChatClient client({text_reply("{\"subtasks\": 3}"), text_reply("{\"subtasks\": []}")});
  auto exchange = ask_json(client, question(), [](const json& value) -> Status {
    if (!value["subtasks"].is_array()) return make_error("subtasks must be an array");
    return {};
  });
  ASSERT_TRUE(exchange.ok());
  ASSERT_TRUE(exchange->value);
  EXPECT_NE(client.requests[1].messages[2].content.find("subtasks must be an array"),
            std::string::npos);
}

TEST(AskJson, GivesUpAfterOneReaskAsNoUsableOutput) {
  ScriptedChatClient client({text_reply("no json"), text_reply("still none"), text_reply("{}")});
  auto exchange = ask_json(client, question());
  ASSERT_TRUE(exchange.ok());
  EXPECT_FALSE(exchange->value);
  EXPECT_EQ(exchange->failure.reason, UnusableReason::not_json);
  EXPECT_EQ(exchange->failure.message(),
            "no_usable_output (not_json): no usable JSON after one re-ask: the reply holds no JSON "
            "object");
  EXPECT_EQ(client.left(), 1u);  // exactly one re-ask
}

TEST(AskJson, ClientFailureIsAnError) {
  ScriptedChatClient client({make_error(ErrorKind::machine, "connection refused")});
  auto exchange = ask_json(client, question());
  ASSERT_FALSE(exchange.ok());
  EXPECT_EQ(exchange.error().kind, ErrorKind::machine);
}

}  // namespace
}  // namespace stitch::llm
