// The tool-calling loop (llm/tool_loop.h) over a scripted client.
#include <gtest/gtest.h>

#include "llm/tool_loop.h"
#include "scripted_chat_client.h"

namespace stitch::llm {
namespace {

using testing::ScriptedChatClient;
using testing::text_reply;

ChatReply calls(std::vector<ToolCall> tool_calls) {
  ChatReply reply = text_reply("", FinishReason::tool_calls, 10, 5);
  reply.tool_calls = std::move(tool_calls);
  return reply;
}

ChatTool echo_tool() {
  ChatTool tool;
  tool.spec.name = "search_cuda_docs";
  tool.spec.description = "search";
  tool.run = [](const nlohmann::json& args) -> Result<std::string> {
    if (!args.contains("query")) return make_error("'query' is required");
    return "hits for " + args["query"].get<std::string>();
  };
  return tool;
}

TEST(ToolLoop, ToolCallsAreRunAndAnsweredUntilTheModelAnswersInText) {
  ScriptedChatClient inner({calls({{"c1", "search_cuda_docs", R"({"query":"cublasLtMatmul"})"},
                                   {"c2", "search_cuda_docs", "{}"}}),
                            calls({{"c3", "no_such_tool", "{}"}}), text_reply("done")});
  ToolLoopClient client(inner, {echo_tool()});
  ChatRequest request;
  request.messages = {text_message(Role::user, "write it")};
  auto reply = client.complete(request);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content, "done");
  EXPECT_EQ(reply->usage.prompt_tokens, 120) << "usage adds up over the rounds";
  ASSERT_EQ(inner.requests.size(), 3u);
  EXPECT_EQ(inner.requests[0].tools.size(), 1u);
  const std::vector<ChatMessage>& second = inner.requests[1].messages;
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(second[1].tool_calls.size(), 2u);
  EXPECT_EQ(second[2].role, Role::tool);
  EXPECT_EQ(second[2].tool_call_id, "c1");
  EXPECT_EQ(second[2].content, "hits for cublasLtMatmul");
  EXPECT_EQ(second[3].content, "error: 'query' is required");
  EXPECT_EQ(inner.requests[2].messages.back().content,
            "error: there is no tool named 'no_such_tool'");
  EXPECT_EQ(client.calls().size(), 3u);
}

TEST(ToolLoop, WhenTheRoundsRunOutTheToolsAreWithdrawn) {
  ScriptedChatClient inner({calls({{"c1", "search_cuda_docs", R"({"query":"a"})"}}),
                            calls({{"c2", "search_cuda_docs", "not json"}}), text_reply("final")});
  ToolLoopClient client(inner, {echo_tool()}, 2);
  auto reply = client.complete(ChatRequest{});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->content, "final");
  ASSERT_EQ(inner.requests.size(), 3u);
  EXPECT_TRUE(inner.requests[2].tools.empty());
  EXPECT_EQ(client.calls()[1].answer, "error: the arguments are not a JSON object");
}

}  // namespace
}  // namespace stitch::llm
