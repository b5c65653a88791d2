// The client's policies over fakes: Retry-After and backoff, length handling, the usage ledger and
// its file, parallel samples in a stable order, redaction.
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "llm/length_handling.h"
#include "llm/parallel_samples.h"
#include "llm/retry.h"
#include "llm/transcript.h"
#include "llm/usage_ledger.h"

namespace stitch::llm {
namespace {

using std::chrono::system_clock;

TEST(RetryAfter, SecondsAndHttpDates) {
  const auto now = system_clock::from_time_t(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
  EXPECT_EQ(parse_retry_after("120", now), 120.0);
  EXPECT_EQ(parse_retry_after(" 1.5 ", now), 1.5);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now), 30.0);
  EXPECT_EQ(parse_retry_after("Wed, 21 Oct 2015 07:00:00 GMT", now), 0.0);  // past
  EXPECT_EQ(parse_retry_after("soon", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("-3", now), std::nullopt);
  EXPECT_EQ(parse_retry_after("", now), std::nullopt);
}

TEST(Backoff, GrowsExponentiallyWithJitterAndACap) {
  BackoffPolicy policy{.base_s = 1, .max_s = 10};
  EXPECT_DOUBLE_EQ(backoff_delay_s(policy, 0, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(backoff_delay_s(policy, 0, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(backoff_delay_s(policy, 2, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(backoff_delay_s(policy, 3, 0.5), 6.0);
  EXPECT_DOUBLE_EQ(backoff_delay_s(policy, 40, 1.0), 10.0);
}

// Replies from a list, recording the requests it got.
class ScriptedClient : public ChatClient {
 public:
  explicit ScriptedClient(std::vector<ChatReply> replies) : replies_(std::move(replies)) {}
  Result<ChatReply> complete(const ChatRequest& request) override {
    requests.push_back(request);
    if (requests.size() > replies_.size()) return make_error("no reply left");
    return replies_[requests.size() - 1];
  }
  std::vector<ChatRequest> requests;

 private:
  std::vector<ChatReply> replies_;
};

ChatReply part(std::string content, FinishReason finish, int64_t completion_tokens) {
  ChatReply reply;
  reply.content = std::move(content);
  reply.finish = finish;
  reply.usage = {10, completion_tokens, 0};
  return reply;
}

ChatRequest ask(std::string text) {
  ChatRequest request;
  request.model = "m";
  request.messages = {text_message(Role::user, std::move(text))};
  return request;
}

TEST(LengthHandling, ContinuesAndJoinsTheParts) {
  ScriptedClient client({part("int main(", FinishReason::length, 5),
                         part(") { return ", FinishReason::length, 5),
                         part("0; }", FinishReason::stop, 3)});
  auto reply = complete_through_length(client, ask("write main"), {.max_rounds = 3});
  ASSERT_TRUE(reply.ok()) << reply.error().message;
  EXPECT_EQ(reply->content, "int main() { return 0; }");
  EXPECT_EQ(reply->finish, FinishReason::stop);
  EXPECT_EQ(reply->usage, (Usage{30, 13, 0}));
  ASSERT_EQ(client.requests.size(), 3u);
  const auto& last = client.requests[2].messages;
  ASSERT_EQ(last.size(), 3u);
  EXPECT_EQ(last[1].role, Role::assistant);
  EXPECT_EQ(last[1].content, "int main() { return ");  // the answer so far
  EXPECT_EQ(last[2].content, kContinuePrompt);
}

TEST(LengthHandling, StopsAfterItsRounds) {
  ScriptedClient client({part("a", FinishReason::length, 1), part("b", FinishReason::length, 1),
                         part("c", FinishReason::stop, 1)});
  auto reply = complete_through_length(client, ask("x"), {.max_rounds = 1});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->content, "ab");
  EXPECT_EQ(reply->finish, FinishReason::length);
  EXPECT_EQ(client.requests.size(), 2u);
}

TEST(LengthHandling, LargerBudgetResendsWithMoreTokens) {
  ScriptedClient client(
      {part("cut", FinishReason::length, 100), part("whole answer", FinishReason::stop, 150)});
  ChatRequest request = ask("x");
  request.max_tokens = 100;
  auto reply = complete_through_length(
      client, request, {.strategy = LengthStrategy::larger_budget, .budget_growth = 4});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->content, "whole answer");
  EXPECT_EQ(reply->usage.completion_tokens, 250);
  ASSERT_EQ(client.requests.size(), 2u);
  EXPECT_EQ(client.requests[1].max_tokens, 400);
  EXPECT_EQ(client.requests[1].messages.size(), 1u);
}

TEST(UsageLedger, SumsPerRoleAndModelAndPricesThem) {
  UsageLedger ledger({{"big", {.prompt_usd_per_million = 2, .completion_usd_per_million = 8}}});
  ledger.add("coder", "big", {1000, 500, 100});
  ledger.add("coder", "big", {1000, 500, 0});
  ledger.add("planner", "small", {10, 20, 0});
  auto lines = ledger.lines();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].role, "coder");
  EXPECT_EQ(lines[0].requests, 2);
  EXPECT_EQ(lines[0].usage, (Usage{2000, 1000, 100}));
  ASSERT_TRUE(lines[0].cost_usd.has_value());
  EXPECT_DOUBLE_EQ(*lines[0].cost_usd, (2000 * 2 + 1000 * 8) / 1e6);
  EXPECT_FALSE(lines[1].cost_usd.has_value());
  UsageTotals totals = ledger.totals();
  EXPECT_EQ(totals.requests, 3);
  EXPECT_FALSE(totals.cost_complete);

  auto path = std::filesystem::temp_directory_path() /
              ("stitch_usage_" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(write_usage_ledger(path, ledger).ok());
  auto report = read_usage_ledger(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(report.ok()) << report.error().message;
  ASSERT_EQ(report->lines.size(), 2u);
  EXPECT_EQ(report->lines[0].usage, lines[0].usage);
  EXPECT_EQ(report->lines[0].cost_usd, lines[0].cost_usd);
  EXPECT_EQ(report->lines[1].cost_usd, std::nullopt);
  EXPECT_EQ(report->totals.usage, totals.usage);
  EXPECT_FALSE(usage_report_from_json({{"format", "other"}}).ok());
}

// Each sample answers after a delay that makes later samples finish first.
class SlowClient : public ChatClient {
 public:
  Result<ChatReply> complete(const ChatRequest& request) override {
    int index = std::stoi(request.label.substr(request.label.size() - 2));
    std::this_thread::sleep_for(std::chrono::milliseconds(10 * (8 - index)));
    if (index == 5) return make_error("sample five fails");
    {
      std::lock_guard lock(mutex);
      finished.push_back(index);
    }
    ChatReply reply;
    reply.content = request.label + " seed " + std::to_string(request.seed.value_or(-1));
    return reply;
  }
  std::mutex mutex;
  std::vector<int> finished;
};

TEST(ParallelSamples, ResultsStayInSampleOrder) {
  ChatRequest request = ask("x");
  request.label = "coder";
  request.seed = 100;
  std::vector<ChatRequest> requests = sample_requests(request, 8);
  SlowClient client;
  auto results = complete_in_parallel(requests, [&](size_t) -> ChatClient& { return client; });
  ASSERT_EQ(results.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    if (i == 5) {
      EXPECT_FALSE(results[i].ok());
      continue;
    }
    ASSERT_TRUE(results[i].ok());
    EXPECT_EQ(results[i]->content, fmt::format("coder-sample-{:02} seed {}", i, 100 + i));
  }
  EXPECT_NE(client.finished.front(), 0) << "the samples ran one after another";
}

TEST(Redactor, ReplacesEveryOccurrence) {
  Redactor redactor("sk-secret");
  EXPECT_EQ(redactor.redact("a sk-secret b sk-secretsk-secret"),
            "a [redacted] b [redacted][redacted]");
  EXPECT_EQ(Redactor("").redact("text"), "text");
}

}  // namespace
}  // namespace stitch::llm
