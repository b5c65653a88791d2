// Asking for a program (src/llm/program_reply.h): the re-ask with the reason, the give-up as
// no_usable_output, and the exchange's record.
#include "llm/program_reply.h"

#include <gtest/gtest.h>

#include "llm/scripted_chat_client.h"

namespace stitch::llm {
namespace {

using testing::ScriptedChatClient;
using testing::text_reply;

constexpr std::string_view kProgram = R"(#include "stitch/program.h"
extern "C" int stitch_abi_version(void) { return STITCH_ABI_VERSION; }
extern "C" int stitch_init(const stitch_tensor* params, int n, void** state) { return 0; }
extern "C" int stitch_forward(void* s, const stitch_tensor* in, int ni, stitch_tensor* out, int no,
                              void* stream) { return 0; }
extern "C" void stitch_destroy(void* state) {}
extern "C" const char* stitch_last_error(void* state) { return ""; }
)";

std::string fenced(std::string_view code) {
  return "```cuda\n" + std::string(code) + "```\n";
}

ChatRequest question() {
  ChatRequest request;
  request.model = "coder-m";
  request.messages = {{Role::system, "rules", {}, {}}, {Role::user, "write it", {}, {}}};
  return request;
}

RoleConfig coder_role() {
  RoleConfig role;
  role.kind = RoleKind::llm;
  role.model = "coder-m";
  role.endpoint.api_base = "http://127.0.0.1:9/v1";
  return role;
}

TEST(AskForProgram, UsableAtOnce) {
  ScriptedChatClient client(
      {text_reply("Here:\n" + fenced(kProgram), FinishReason::stop, 1000, 500)});
  auto exchange = ask_for_program(client, question());
  ASSERT_TRUE(exchange.ok());
  EXPECT_EQ(exchange->extraction.outcome, StepOutcome::usable);
  EXPECT_EQ(exchange->extraction.source, kProgram);
  EXPECT_FALSE(exchange->reasked);
  PriceTable prices;
  prices["coder-m"] = {2.0, 8.0};
  const nlohmann::json record =
      program_exchange_record(*exchange, "generate", coder_role(), prices);
  EXPECT_EQ(record["outcome"], "usable");
  EXPECT_EQ(record["skill"], "generate");
  EXPECT_EQ(record["prompt_tokens"], 1000);
  EXPECT_DOUBLE_EQ(record["cost_usd"].get<double>(), (1000 * 2.0 + 500 * 8.0) / 1e6);
  EXPECT_EQ(record["source_note"], "block 1 of 1");
  EXPECT_EQ(record["replies"][0]["finish"], "stop");
  auto summary = exchange_summary_from_json(record);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->outcome, StepOutcome::usable);
  EXPECT_EQ(summary->completion_tokens, 500);
  EXPECT_EQ(summary->cost_usd, record["cost_usd"].get<double>());
  EXPECT_FALSE(exchange_summary_from_json(nlohmann::json{{"format", "other"}}).ok());
}

TEST(AskForProgram, ReasksOnceWithTheReason) {
  std::string without_destroy(kProgram);
  without_destroy.replace(
      without_destroy.find("extern \"C\" void stitch_destroy"),
      std::string_view("extern \"C\" void stitch_destroy(void* state) {}").size(), "");
  ScriptedChatClient client({text_reply(fenced(without_destroy)), text_reply(fenced(kProgram))});
  auto exchange = ask_for_program(client, question());
  ASSERT_TRUE(exchange.ok());
  EXPECT_EQ(exchange->extraction.outcome, StepOutcome::usable);
  EXPECT_TRUE(exchange->reasked);
  EXPECT_EQ(exchange->usage().prompt_tokens, 200);
  ASSERT_EQ(client.requests.size(), 2u);
  const std::vector<ChatMessage>& second = client.requests[1].messages;
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(second[2].role, Role::assistant);
  EXPECT_NE(second[3].content.find("stitch_destroy is not defined"), std::string::npos)
      << second[3].content;
}

TEST(AskForProgram, GivesUpAsNoUsableOutput) {
  ScriptedChatClient client(
      {text_reply("I cannot."), text_reply("Still no.", FinishReason::stop), text_reply("unused")});
  auto exchange = ask_for_program(client, question());
  ASSERT_TRUE(exchange.ok());
  EXPECT_EQ(exchange->extraction.outcome, StepOutcome::no_usable_output);
  EXPECT_EQ(exchange->extraction.failure.reason, UnusableReason::no_code);
  EXPECT_EQ(client.left(), 1u);
  const nlohmann::json record = program_exchange_record(*exchange, "revise", coder_role(), {});
  EXPECT_EQ(record["outcome"], "no_usable_output");
  EXPECT_EQ(record["reason"], "no_code");
  EXPECT_TRUE(record["cost_usd"].is_null());
  EXPECT_EQ(record["replies"].size(), 2u);
  auto summary = exchange_summary_from_json(record);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->reason, UnusableReason::no_code);
  EXPECT_FALSE(summary->cost_usd);
}

TEST(AskForProgram, ClientErrorsPropagate) {
  ScriptedChatClient client({make_error(ErrorKind::machine, "stalled past the timeout")});
  auto exchange = ask_for_program(client, question());
  ASSERT_FALSE(exchange.ok());
  EXPECT_EQ(exchange.error().message, "stalled past the timeout");
}

}  // namespace
}  // namespace stitch::llm
