// HttpChatClient against the scripted OpenAI-compatible server (support/scripted_openai_server.py)
// on a loopback port: streaming and not, tool calls, the response_format fallback, retries (429
// with Retry-After, 500, dropped connections, stalls), length continuation, reasoning models,
// usage and cost, transcripts free of the API key, K samples in parallel, the doctor's probe.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "llm/endpoint_probe.h"
#include "llm/http_chat_client.h"
#include "llm/length_handling.h"
#include "llm/parallel_samples.h"
#include "support/scripted_server.h"

namespace stitch::llm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using stitch::testing::ScriptedServer;

// Real time, recorded sleeps (none slept).
class RecordingClock : public RetryClock {
 public:
  double now_s() override { return system_.now_s(); }
  std::chrono::system_clock::time_point wall_now() override { return system_.wall_now(); }
  void sleep_s(double seconds) override { sleeps.push_back(seconds); }
  std::vector<double> sleeps;

 private:
  SystemRetryClock system_;
};

class HttpChatClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("stitch_llm_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ScriptedServer& serve(json replies, json models = json::array({"scripted-model"})) {
    server_ = std::make_unique<ScriptedServer>(dir_ / "server",
                                               json{{"models", models}, {"replies", replies}});
    return *server_;
  }
  Endpoint endpoint(double timeout_s = 10, int max_retries = 2) const {
    Endpoint out;
    out.api_base = server_->api_base();
    out.timeout_s = timeout_s;
    out.max_retries = max_retries;
    return out;
  }
  HttpChatClientOptions options(fs::path transcripts = {}) {
    HttpChatClientOptions options;
    options.transcript_dir = std::move(transcripts);
    options.role = "coder";
    options.ledger = &ledger_;
    options.clock = &clock_;
    options.backoff.base_s = 0.25;
    return options;
  }
  HttpChatClient client(Endpoint endpoint, fs::path transcripts = {}) {
    return HttpChatClient(std::move(endpoint), options(std::move(transcripts)));
  }
  static ChatRequest ask(std::string text, bool stream = true) {
    ChatRequest request;
    request.model = "scripted-model";
    request.messages = {text_message(Role::user, std::move(text))};
    request.stream = stream;
    return request;
  }

  fs::path dir_;
  std::unique_ptr<ScriptedServer> server_;
  RecordingClock clock_;
  UsageLedger ledger_{
      {{"scripted-model", {.prompt_usd_per_million = 1, .completion_usd_per_million = 4}}}};
};

const json kUsage = {{"prompt_tokens", 12}, {"completion_tokens", 30}, {"reasoning_tokens", 8}};

TEST_F(HttpChatClientTest, StreamsContentReasoningAndUsage) {
  serve({{{"content", "Hello from a streamed reply"},
          {"reasoning", "thinking it over"},
          {"usage", kUsage},
          {"chunks", 5}}});
  auto reply = client(endpoint()).complete(ask("hi"));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content, "Hello from a streamed reply");
  EXPECT_EQ(reply->reasoning, "thinking it over");
  EXPECT_EQ(reply->finish, FinishReason::stop);
  EXPECT_EQ(reply->usage, (Usage{12, 30, 8}));
  EXPECT_EQ(reply->attempts, 1);
  auto sent = server_->chat_requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["body"]["stream"], true);
  EXPECT_EQ(sent[0]["body"]["stream_options"]["include_usage"], true);
  EXPECT_EQ(sent[0]["headers"]["accept"], "text/event-stream");
  EXPECT_FALSE(sent[0]["authorization"]["present"]);  // no key configured
}

TEST_F(HttpChatClientTest, NonStreamedReply) {
  serve({{{"content", "whole"}, {"usage", kUsage}}});
  auto reply = client(endpoint()).complete(ask("hi", false));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content, "whole");
  EXPECT_EQ(reply->usage, (Usage{12, 30, 8}));
  EXPECT_EQ(server_->chat_requests()[0]["body"]["stream"], false);
}

TEST_F(HttpChatClientTest, ToolCallsStreamedAndWhole) {
  json call = {{"id", "call_1"}, {"name", "compile"}, {"arguments", R"({"source": "x.cu"})"}};
  serve({{{"tool_calls", {call}}}, {{"tool_calls", {call}}}});
  ChatRequest request = ask("build it");
  request.tools = {{"compile", "compiles a file", {{"type", "object"}}}};
  for (bool stream : {true, false}) {
    request.stream = stream;
    auto reply = client(endpoint()).complete(request);
    ASSERT_TRUE(reply.ok()) << reply.error().message;
    EXPECT_EQ(reply->finish, FinishReason::tool_calls);
    ASSERT_EQ(reply->tool_calls.size(), 1u);
    EXPECT_EQ(reply->tool_calls[0], (ToolCall{"call_1", "compile", R"({"source": "x.cu"})"}));
  }
  EXPECT_EQ(server_->chat_requests()[0]["body"]["tools"][0]["function"]["name"], "compile");
}

TEST_F(HttpChatClientTest, ResendsWithoutResponseFormatWhenRefused) {
  serve({{{"kind", "http_error"},
          {"status", 400},
          {"unless_no_response_format", true},
          {"body", {{"error", {{"message", "unknown field: response_format"}}}}}},
         {{"content", R"({"answer": 1})"}}});
  ChatRequest request = ask("json please");
  request.response_schema = json{{"type", "object"}};
  auto reply = client(endpoint()).complete(request);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_TRUE(reply->response_format_dropped);
  EXPECT_EQ(reply->content, R"({"answer": 1})");
  EXPECT_TRUE(clock_.sleeps.empty());
  auto sent = server_->chat_requests();
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(sent[0]["body"].contains("response_format"));
  EXPECT_FALSE(sent[1]["body"].contains("response_format"));
}

TEST_F(HttpChatClientTest, HonoursRetryAfterOn429) {
  serve({{{"kind", "http_error"}, {"status", 429}, {"retry_after", "7"}},
         {{"content", "after the wait"}}});
  auto reply = client(endpoint()).complete(ask("hi"));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content, "after the wait");
  EXPECT_EQ(reply->attempts, 2);
  EXPECT_EQ(clock_.sleeps, std::vector<double>{7.0});
}

TEST_F(HttpChatClientTest, BacksOffAfter500) {
  serve({{{"kind", "http_error"}, {"status", 500}},
         {{"kind", "http_error"}, {"status", 503}},
         {{"content", "third time"}}});
  auto reply = client(endpoint()).complete(ask("hi", false));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->attempts, 3);
  ASSERT_EQ(clock_.sleeps.size(), 2u);
  EXPECT_GE(clock_.sleeps[0], 0.125);  // base 0.25 × [0.5, 1)
  EXPECT_LE(clock_.sleeps[0], 0.25);
  EXPECT_GE(clock_.sleeps[1], 0.25);  // then twice that
  EXPECT_LE(clock_.sleeps[1], 0.5);
}

TEST_F(HttpChatClientTest, GivesUpAfterMaxRetries) {
  serve({{{"kind", "http_error"}, {"status", 500}},
         {{"kind", "http_error"}, {"status", 500}},
         {{"content", "too late"}}});
  auto reply = client(endpoint(10, 1)).complete(ask("hi"));
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.error().message.find("HTTP 500"), std::string::npos) << reply.error().message;
  EXPECT_EQ(server_->chat_requests().size(), 2u);
}

TEST_F(HttpChatClientTest, RetriesADroppedConnection) {
  serve({{{"kind", "drop"}, {"after_chunks", 2}, {"content", "lost half way"}},
         {{"content", "streamed again"}},
         {{"kind", "drop"}, {"content", "lost half way"}},
         {{"content", "sent again"}}});
  auto streamed = client(endpoint()).complete(ask("hi"));
  ASSERT_TRUE(streamed.ok()) << streamed.error().message;
  EXPECT_EQ(streamed->content, "streamed again");
  EXPECT_EQ(streamed->attempts, 2);
  auto whole = client(endpoint()).complete(ask("hi", false));
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  EXPECT_EQ(whole->content, "sent again");
  EXPECT_EQ(clock_.sleeps.size(), 2u);
}

TEST_F(HttpChatClientTest, AStallPastTheTimeoutFailsAfterItsRetries) {
  serve({{{"kind", "stall"}, {"stall_s", 4}, {"after_chunks", 1}},
         {{"kind", "stall"}, {"stall_s", 4}}});
  auto start = std::chrono::steady_clock::now();
  auto reply = client(endpoint(0.5, 1)).complete(ask("hi"));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind, ErrorKind::machine);
  EXPECT_NE(reply.error().message.find("stalled"), std::string::npos) << reply.error().message;
  EXPECT_EQ(server_->chat_requests().size(), 2u);
  EXPECT_EQ(clock_.sleeps.size(), 1u);
  EXPECT_LT(took, 6.0) << "the stall was not cut at the timeout";
}

TEST_F(HttpChatClientTest, ContinuesAReplyCutByLength) {
  serve({{{"content", "__global__ void k("}, {"finish_reason", "length"}, {"usage", kUsage}},
         {{"content", "float* x) {}"}, {"usage", kUsage}}});
  HttpChatClient chat = client(endpoint());
  auto reply = complete_through_length(chat, ask("write a kernel"));
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content, "__global__ void k(float* x) {}");
  EXPECT_EQ(reply->finish, FinishReason::stop);
  EXPECT_EQ(reply->usage.completion_tokens, 60);
  auto second = server_->chat_requests()[1]["body"]["messages"];
  ASSERT_EQ(second.size(), 3u);
  EXPECT_EQ(second[1]["role"], "assistant");
  EXPECT_EQ(second[1]["content"], "__global__ void k(");
}

TEST_F(HttpChatClientTest, ReasoningModelBudgetAndAnswerInReasoning) {
  serve({{{"content", ""}, {"reasoning", "the answer is 4"}, {"reasoning_field", "reasoning"}},
         {{"content", ""}, {"reasoning", "plain"}}});
  Endpoint reasoning = endpoint();
  reasoning.reasoning_model = true;
  ChatRequest request = ask("2+2?");
  request.max_tokens = 64;
  request.reasoning_effort = "low";
  auto reply = client(reasoning).complete(request);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content, "the answer is 4");
  ChatRequest plain = ask("2+2?", false);
  plain.max_tokens = 64;
  ASSERT_TRUE(client(endpoint()).complete(plain).ok());
  auto sent = server_->chat_requests();
  EXPECT_EQ(sent[0]["body"]["max_completion_tokens"], 64);
  EXPECT_FALSE(sent[0]["body"].contains("max_tokens"));
  EXPECT_EQ(sent[0]["body"]["reasoning_effort"], "low");
  EXPECT_EQ(sent[1]["body"]["max_tokens"], 64);
}

TEST_F(HttpChatClientTest, UsageAndCostInTheLedger) {
  serve({{{"content", "a"}, {"usage", kUsage}}, {{"content", "b"}, {"usage", kUsage}}});
  HttpChatClient chat = client(endpoint());
  ASSERT_TRUE(chat.complete(ask("one")).ok());
  ASSERT_TRUE(chat.complete(ask("two", false)).ok());
  auto lines = ledger_.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].role, "coder");
  EXPECT_EQ(lines[0].requests, 2);
  EXPECT_EQ(lines[0].usage, (Usage{24, 60, 16}));
  ASSERT_TRUE(lines[0].cost_usd.has_value());
  EXPECT_DOUBLE_EQ(*lines[0].cost_usd, (24 * 1 + 60 * 4) / 1e6);
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(HttpChatClientTest, TranscriptsAreWrittenAndNeverHoldTheKey) {
  const std::string key = "sk-test-" + std::to_string(::getpid()) + "-do-not-write";
  ::setenv("STITCH_TEST_LLM_KEY", key.c_str(), 1);
  serve({{{"content", "your header said Bearer " + key}, {"usage", kUsage}},
         {{"kind", "http_error"},
          {"status", 401},
          {"body", {{"error", {{"message", "bad key " + key}}}}}}});
  Endpoint keyed = endpoint();
  keyed.api_key_env = "STITCH_TEST_LLM_KEY";
  const fs::path transcripts = dir_ / "attempt" / "llm";
  HttpChatClient chat = client(keyed, transcripts);
  ChatRequest request = ask("hello");
  request.label = "planner";
  auto reply = chat.complete(request);
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content.find(key), std::string::npos);
  EXPECT_NE(reply->content.find("[redacted]"), std::string::npos);
  auto refused = chat.complete(ask("again", false));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().message.find(key), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("HTTP 401"), std::string::npos);
  ::unsetenv("STITCH_TEST_LLM_KEY");

  for (const char* name : {"01-planner.request.json", "01-planner.reply.json", "01-planner.raw.txt",
                           "02-coder.request.json", "02-coder.reply.json", "02-coder.raw.txt"})
    EXPECT_TRUE(fs::exists(transcripts / name)) << name;
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
    // The script holds the key on purpose (the server echoes it); every other file must not.
    if (!entry.is_regular_file() || entry.path().filename() == "script.json") continue;
    ++files;
    EXPECT_EQ(read_text(entry.path()).find(key), std::string::npos) << entry.path();
  }
  EXPECT_GE(files, 8);
  auto record = read_reply_record(transcripts / "01-planner.reply.json");
  ASSERT_TRUE(record.ok()) << record.error().message;
  ASSERT_TRUE(record->reply.has_value());
  EXPECT_EQ(record->reply->usage, (Usage{12, 30, 8}));
  auto failed = read_reply_record(transcripts / "02-coder.reply.json");
  ASSERT_TRUE(failed.ok());
  EXPECT_NE(failed->error.find("HTTP 401"), std::string::npos);
  EXPECT_NE(read_text(transcripts / "01-planner.raw.txt").find("data: [DONE]"), std::string::npos);
  auto sent = server_->chat_requests();
  EXPECT_TRUE(sent[0]["authorization"]["present"]);
}

TEST_F(HttpChatClientTest, MissingKeyVariableIsNamedNotGuessed) {
  serve(json::array());
  Endpoint keyed = endpoint();
  keyed.api_key_env = "STITCH_TEST_NO_SUCH_KEY";
  auto reply = client(keyed).complete(ask("hi"));
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.error().kind, ErrorKind::bad_input);
  EXPECT_NE(reply.error().message.find("STITCH_TEST_NO_SUCH_KEY"), std::string::npos);
  EXPECT_TRUE(server_->chat_requests().empty());
}

TEST_F(HttpChatClientTest, EightSamplesInParallelKeepTheirOrder) {
  json replies = json::array();
  for (int i = 7; i >= 0; --i)  // the script lists them backwards; the slowest is sample 0
    replies.push_back({{"match", fmt::format("sample {}", i)},
                       {"content", fmt::format("answer {}", i)},
                       {"chunk_delay_s", 0.02 * (8 - i)},
                       {"usage", kUsage}});
  serve(replies);
  std::vector<ChatRequest> requests = sample_requests(ask("write it"), 8);
  for (size_t i = 0; i < requests.size(); ++i)
    requests[i].messages[0].content += fmt::format(" (sample {})", i);
  std::vector<std::unique_ptr<HttpChatClient>> clients;
  for (int i = 0; i < 8; ++i)
    clients.push_back(std::make_unique<HttpChatClient>(
        endpoint(), options(dir_ / "attempts" / fmt::format("{:02}", i) / "llm")));
  auto results =
      complete_in_parallel(requests, [&](size_t i) -> ChatClient& { return *clients[i]; });
  ASSERT_EQ(results.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].error().message;
    EXPECT_EQ(results[i]->content, fmt::format("answer {}", i));
    EXPECT_TRUE(fs::exists(dir_ / "attempts" / fmt::format("{:02}", i) / "llm" /
                           fmt::format("01-sample-{:02}.reply.json", i)));
  }
  EXPECT_EQ(ledger_.totals().requests, 8);
}

TEST_F(HttpChatClientTest, ProbeListsModelsAndAsksTheFirst) {
  serve({{{"content", "Hello there, I am a scripted model with many words"}}}, {"alpha", "beta"});
  CurlTransport transport;
  EndpointProbe probe = probe_endpoint(endpoint(), "", transport, clock_);
  EXPECT_TRUE(probe.ok()) << probe.models_error << " / " << probe.completion_error;
  EXPECT_EQ(probe.models, (std::vector<std::string>{"alpha", "beta"}));
  EXPECT_EQ(probe.model, "alpha");
  EXPECT_EQ(probe.reply_start, "Hello there, I am a scripted model with");
  auto sent = server_->chat_requests();
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0]["body"]["max_tokens"], 8);
  EXPECT_EQ(sent[0]["body"]["model"], "alpha");

  Endpoint nobody;
  nobody.api_base = "http://127.0.0.1:1/v1";
  EndpointProbe dead = probe_endpoint(nobody, "m", transport, clock_);
  EXPECT_FALSE(dead.ok());
  EXPECT_FALSE(dead.models_error.empty());
  EXPECT_FALSE(dead.completion_error.empty());
}

}  // namespace
}  // namespace stitch::llm
