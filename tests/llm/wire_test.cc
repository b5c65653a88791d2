// The pure parts of the LLM client: the SSE parser fed in every split, the stream assembler, the
// request's wire form (max_completion_tokens rule, response_format, tools, stream_options), a
// non-streamed body, and the reply's transcript JSON read back.
#include <gtest/gtest.h>

#include "llm/chat_wire.h"
#include "llm/sse_parser.h"

namespace stitch::llm {
namespace {

using nlohmann::json;

TEST(SseParser, SameEventsWhateverTheSplit) {
  const std::string stream =
      ": keep-alive\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "event: message\n"
      "data:line one\n"
      "data: line two\n\n"
      "id: 7\n"
      "data: [DONE]\n\n";
  const std::vector<std::string> want = {"{\"a\":1}", "line one\nline two", "[DONE]"};
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    SseParser parser;
    std::vector<std::string> got;
    for (size_t at = 0; at < stream.size(); at += piece)
      for (auto& event : parser.feed(std::string_view(stream).substr(at, piece)))
        got.push_back(event);
    for (auto& event : parser.finish())
      got.push_back(event);
    EXPECT_EQ(got, want) << "pieces of " << piece << " bytes";
  }
}

TEST(SseParser, FinishDispatchesAnEventWithoutItsBlankLine) {
  SseParser parser;
  EXPECT_TRUE(parser.feed("data: last").empty());
  EXPECT_EQ(parser.finish(), std::vector<std::string>{"last"});
}

json chunk(json delta, json finish = nullptr) {
  return {{"model", "served-name"},
          {"choices", {{{"index", 0}, {"delta", delta}, {"finish_reason", finish}}}}};
}

TEST(StreamAssembler, JoinsContentReasoningToolCallsAndUsage) {
  StreamAssembler assembler;
  std::vector<json> chunks = {
      chunk({{"role", "assistant"}, {"content", ""}}),
      chunk({{"reasoning_content", "think "}}),
      chunk({{"reasoning", "more"}}),
      chunk({{"content", "Hel"}}),
      chunk({{"content", "lo"}}),
      chunk({{"tool_calls",
              {{{"index", 0},
                {"id", "c0"},
                {"function", {{"name", "f"}, {"arguments", "{\"x\""}}}}}}}),
      chunk({{"tool_calls", {{{"index", 1}, {"id", "c1"}, {"function", {{"name", "g"}}}}}}}),
      chunk({{"tool_calls", {{{"index", 0}, {"function", {{"arguments", ": 1}"}}}}}}}),
      chunk(json::object(), "tool_calls"),
      {{"choices", json::array()},
       {"usage",
        {{"prompt_tokens", 11},
         {"completion_tokens", 9},
         {"completion_tokens_details", {{"reasoning_tokens", 4}}}}}}};
  for (const json& c : chunks)
    ASSERT_TRUE(assembler.apply(c.dump()).ok());
  EXPECT_TRUE(assembler.finished());
  EXPECT_FALSE(assembler.done());
  ASSERT_TRUE(assembler.apply("[DONE]").ok());
  EXPECT_TRUE(assembler.done());
  ChatReply reply = assembler.reply();
  EXPECT_EQ(reply.content, "Hello");
  EXPECT_EQ(reply.reasoning, "think more");
  ASSERT_EQ(reply.tool_calls.size(), 2u);
  EXPECT_EQ(reply.tool_calls[0], (ToolCall{"c0", "f", "{\"x\": 1}"}));
  EXPECT_EQ(reply.tool_calls[1], (ToolCall{"c1", "g", ""}));
  EXPECT_EQ(reply.finish, FinishReason::tool_calls);
  EXPECT_EQ(reply.usage, (Usage{11, 9, 4}));
  EXPECT_EQ(reply.model, "served-name");
}

// llama-cpp-python's server streams no usage chunk, whatever stream_options asks: the tokens are
// the stream's text events (one token each there), marked estimated; a usage chunk wins.
TEST(StreamAssembler, WithoutAUsageChunkCountsTextEventsAsEstimatedTokens) {
  StreamAssembler assembler;
  for (const json& c : {chunk({{"role", "assistant"}}), chunk({{"content", "Hel"}}),
                        chunk({{"content", ""}}), chunk({{"content", "lo"}}),
                        chunk({{"reasoning_content", "hm"}}), chunk(json::object(), "stop")})
    ASSERT_TRUE(assembler.apply(c.dump()).ok());
  EXPECT_EQ(assembler.reply().usage, (Usage{0, 3, 0, /*estimated=*/true}));
  json usage = usage_to_json(assembler.reply().usage);
  EXPECT_EQ(usage["estimated"], true);
  EXPECT_EQ(usage_from_json(usage), assembler.reply().usage);

  const json usage_chunk = {{"choices", json::array()},
                            {"usage", {{"prompt_tokens", 7}, {"completion_tokens", 3}}}};
  ASSERT_TRUE(assembler.apply(usage_chunk.dump()).ok());
  EXPECT_EQ(assembler.reply().usage, (Usage{7, 3, 0}));
  EXPECT_FALSE(usage_to_json(assembler.reply().usage).contains("estimated"));
}

TEST(StreamAssembler, RefusesGarbageAndErrorEvents) {
  StreamAssembler assembler;
  EXPECT_FALSE(assembler.apply("not json").ok());
  auto error = assembler.apply(R"({"error": {"message": "overloaded"}})");
  ASSERT_FALSE(error.ok());
  EXPECT_NE(error.error().message.find("overloaded"), std::string::npos);
}

TEST(StreamAssembler, AnswerOnlyInReasoningBecomesTheContent) {
  StreamAssembler assembler;
  ASSERT_TRUE(assembler.apply(chunk({{"reasoning", "the answer"}}, "stop").dump()).ok());
  EXPECT_EQ(assembler.reply().content, "the answer");
  EXPECT_EQ(assembler.reply().reasoning, "the answer");
}

ChatRequest sample_request() {
  ChatRequest request;
  request.model = "m";
  request.messages = {text_message(Role::system, "be brief"), text_message(Role::user, "hi")};
  ChatMessage called = text_message(Role::assistant, "");
  called.tool_calls = {{"c0", "lookup", "{}"}};
  request.messages.push_back(called);
  ChatMessage answer = text_message(Role::tool, "42");
  answer.tool_call_id = "c0";
  request.messages.push_back(answer);
  request.max_tokens = 100;
  request.temperature = 0.2;
  return request;
}

TEST(RequestToWire, PlainModelGetsMaxTokensAndStreamOptions) {
  ChatRequest request = sample_request();
  Endpoint endpoint;
  EXPECT_FALSE(sends_max_completion_tokens(endpoint, request));
  json body = request_to_wire(request, {});
  EXPECT_EQ(body["max_tokens"], 100);
  EXPECT_FALSE(body.contains("max_completion_tokens"));
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["temperature"], 0.2);
  EXPECT_EQ(body["messages"][2]["content"], nullptr);
  EXPECT_EQ(body["messages"][2]["tool_calls"][0]["function"]["name"], "lookup");
  EXPECT_EQ(body["messages"][3]["tool_call_id"], "c0");
  request.stream = false;
  EXPECT_FALSE(request_to_wire(request, {}).contains("stream_options"));
}

TEST(RequestToWire, ReasoningModelsGetMaxCompletionTokens) {
  ChatRequest request = sample_request();
  Endpoint endpoint;
  endpoint.reasoning_model = true;
  EXPECT_TRUE(sends_max_completion_tokens(endpoint, request));
  request.reasoning_effort = "high";
  EXPECT_TRUE(sends_max_completion_tokens(Endpoint{}, request));
  json body = request_to_wire(request, {.max_completion_tokens = true});
  EXPECT_EQ(body["max_completion_tokens"], 100);
  EXPECT_FALSE(body.contains("max_tokens"));
  EXPECT_EQ(body["reasoning_effort"], "high");
}

TEST(RequestToWire, ToolsAndResponseFormat) {
  ChatRequest request = sample_request();
  request.tools = {{"lookup", "finds things", {{"type", "object"}}}};
  request.response_schema = json{{"type", "object"}};
  json body = request_to_wire(request, {});
  EXPECT_EQ(body["tools"][0]["function"]["name"], "lookup");
  EXPECT_EQ(body["tool_choice"], "auto");
  EXPECT_EQ(body["response_format"]["type"], "json_schema");
  EXPECT_EQ(body["response_format"]["json_schema"]["schema"]["type"], "object");
  EXPECT_FALSE(request_to_wire(request, {.response_format = false}).contains("response_format"));
}

TEST(ReplyFromWire, ReadsAWholeCompletion) {
  json body = {{"model", "m"},
               {"choices",
                {{{"message",
                   {{"role", "assistant"}, {"content", nullptr}, {"reasoning_content", "because"}}},
                  {"finish_reason", "length"}}}},
               {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 5}}}};
  auto reply = reply_from_wire(body);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content, "because");  // answer only in reasoning
  EXPECT_EQ(reply->finish, FinishReason::length);
  EXPECT_EQ(reply->usage, (Usage{3, 5, 0}));
  EXPECT_FALSE(reply_from_wire(json{{"error", {{"message", "bad"}}}}).ok());
  EXPECT_FALSE(reply_from_wire(json{{"choices", json::array()}}).ok());
}

TEST(FinishReason, MapsTheWireNames) {
  EXPECT_EQ(finish_reason_from_wire("stop"), FinishReason::stop);
  EXPECT_EQ(finish_reason_from_wire("length"), FinishReason::length);
  EXPECT_EQ(finish_reason_from_wire("tool_calls"), FinishReason::tool_calls);
  EXPECT_EQ(finish_reason_from_wire("function_call"), FinishReason::tool_calls);
  EXPECT_EQ(finish_reason_from_wire("content_filter"), FinishReason::content_filter);
  EXPECT_EQ(finish_reason_from_wire("eos"), FinishReason::unknown);
}

TEST(ReplyJson, RoundTrips) {
  ChatReply reply;
  reply.content = "c";
  reply.reasoning = "r";
  reply.tool_calls = {{"id", "f", "{}"}};
  reply.finish = FinishReason::length;
  reply.usage = {1, 2, 3};
  reply.model = "m";
  reply.seconds = 1.5;
  reply.attempts = 3;
  reply.response_format_dropped = true;
  auto back = reply_from_json(reply_to_json(reply));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(reply_to_json(*back), reply_to_json(reply));
}

}  // namespace
}  // namespace stitch::llm
