// Round trips against the real HTTP server on a loopback port, with the SQLite store and the fake
// scorer: the endpoints, the same keys in every reply, idempotency, submit/poll, 429/503 with
// Retry-After, auth, timeouts, health and metrics.
#include <httplib.h>

#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "serve/fake_scorer.h"
#include "serve/http_api.h"
#include "serve/request_store.h"
#include "serve/service.h"
#include "serve_fixtures.h"

namespace stitch::serve {
namespace {

constexpr const char* kToken = "s3cret-token";

class HttpRig {
 public:
  explicit HttpRig(ServiceOptions options = {}, bool require_auth = true) {
    store_ = SqliteRequestStore::open(dir_.path() / "requests.db").value();
    service_ = std::make_unique<ScoreService>(*store_, scorer, clock_, options);
    EXPECT_TRUE(service_->start().ok());
    ApiOptions api;
    api.token = kToken;
    api.require_auth = require_auth;
    api.retry_after_s = 7;
    server_ = std::make_unique<HttpServer>(*service_, api);
    port_ = *server_->bind("127.0.0.1", 0);
    thread_ = std::thread([this] { server_->run(); });
    EXPECT_TRUE(test::eventually([this] { return client().Get("/healthz") != nullptr; }));
  }
  ~HttpRig() {
    service_->shutdown(0);
    server_->stop();
    thread_.join();
  }

  httplib::Client client(const std::string& token = kToken) const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(30, 0);
    if (!token.empty()) client.set_bearer_token_auth(token.c_str());
    return client;
  }
  httplib::Result post(const std::string& path, const Candidate& candidate,
                       const std::string& token = kToken) const {
    return client(token).Post(path.c_str(), candidate_to_json(candidate).dump(),
                              "application/json");
  }
  ScoreService& service() { return *service_; }
  FakeScorer scorer;

 private:
  test::TempDir dir_;
  SteadyClock clock_;
  std::unique_ptr<SqliteRequestStore> store_;
  std::unique_ptr<ScoreService> service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

// The reply of a response, checked to carry exactly the reply keys.
ScoreReply reply_of(const httplib::Result& response) {
  EXPECT_TRUE(response);
  if (!response) return {};
  auto doc = nlohmann::json::parse(response->body, nullptr, false);
  EXPECT_EQ(doc.size(), kReplyKeys.size()) << response->body;
  for (std::string_view key : kReplyKeys)
    EXPECT_TRUE(doc.contains(key)) << key;
  auto reply = reply_from_json(doc);
  EXPECT_TRUE(reply.ok()) << response->body;
  return reply.ok() ? *reply : ScoreReply{};
}

TEST(ServeHttp, BlockingScoreReturnsTheFinalReply) {
  HttpRig rig;
  auto response = rig.post("/v1/score", test::candidate("a", "FAKE_SPEEDUP=2"));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  ScoreReply reply = reply_of(response);
  EXPECT_EQ(reply.status, RequestStatus::done);
  EXPECT_TRUE(reply.scored.compiled && reply.scored.correct);
  EXPECT_DOUBLE_EQ(*reply.scored.speedup, 2.0);
  EXPECT_DOUBLE_EQ(reply.scored.reward, 3.0);
  EXPECT_EQ(reply.scored.baseline, "eager");
}

TEST(ServeHttp, ARepeatedRequestIdReturnsTheStoredResultWithoutScoringAgain) {
  HttpRig rig;
  ScoreReply first = reply_of(rig.post("/v1/score", test::candidate("same", "FAKE_SPEEDUP=3")));
  auto again = rig.post("/v1/score", test::candidate("same", "FAKE_SPEEDUP=3"));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 200);
  EXPECT_EQ(reply_to_json(reply_of(again)), reply_to_json(first));
  EXPECT_EQ(rig.scorer.scored(), 1);
  auto conflict = rig.post("/v1/submit", test::candidate("same", "FAKE_SPEEDUP=1"));
  EXPECT_EQ(conflict->status, 409);
  EXPECT_EQ(reply_of(conflict).scored.error, ErrorCode::id_conflict);
}

TEST(ServeHttp, SubmitThenPollUntilFinal) {
  HttpRig rig;
  auto submitted = rig.post("/v1/submit", test::candidate("p", "FAKE_SLEEP_MS=100 FAKE_WRONG"));
  ASSERT_TRUE(submitted);
  EXPECT_EQ(submitted->status, 202);
  EXPECT_EQ(reply_of(submitted).status, RequestStatus::queued);
  ScoreReply polled;
  ASSERT_TRUE(test::eventually([&] {
    auto response = rig.client().Get("/v1/requests/p");
    polled = reply_of(response);
    return response && response->status == 200 && is_final(polled.status);
  }));
  EXPECT_EQ(polled.status, RequestStatus::done);
  EXPECT_EQ(polled.scored.error, ErrorCode::wrong);
  EXPECT_EQ(polled.scored.reward, 0);
  auto missing = rig.client().Get("/v1/requests/nobody");
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(reply_of(missing).scored.error, ErrorCode::not_found);
}

TEST(ServeHttp, AFullQueueAnswers429WithRetryAfter) {
  ServiceOptions options;
  options.queue_capacity = 1;
  HttpRig rig(options);
  rig.post("/v1/submit", test::candidate("busy", "FAKE_SLEEP_MS=1000"));
  ASSERT_TRUE(test::eventually([&] { return rig.service().gauges().in_flight == 1; }));
  EXPECT_EQ(rig.post("/v1/submit", test::candidate("waits"))->status, 202);
  auto refused = rig.post("/v1/submit", test::candidate("refused"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "7");
  EXPECT_EQ(reply_of(refused).scored.error, ErrorCode::queue_full);
  EXPECT_EQ(rig.client().Get("/v1/requests/refused")->status, 404);  // never accepted
}

TEST(ServeHttp, WithoutTheRightTokenNothingIsAccepted) {
  HttpRig rig;
  for (const std::string& token :
       {std::string(""), std::string("wrong"), std::string(kToken) + "x"}) {
    auto refused = rig.post("/v1/submit", test::candidate("t-" + token), token);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->status, 401) << token;
    EXPECT_EQ(refused->get_header_value("WWW-Authenticate"), "Bearer");
    EXPECT_EQ(reply_of(refused).scored.error, ErrorCode::unauthorized);
  }
  EXPECT_EQ(rig.client("").Get("/v1/requests/x")->status, 401);
  EXPECT_EQ(rig.client("").Get("/healthz")->status, 200);  // health and metrics need none
  EXPECT_EQ(rig.scorer.scored(), 0);
}

TEST(ServeHttp, NoAuthModeAcceptsWithoutAToken) {
  HttpRig rig({}, /*require_auth=*/false);
  EXPECT_EQ(rig.post("/v1/score", test::candidate("open"), "")->status, 200);
}

TEST(ServeHttp, ARequestTimeoutIsAFinalReplyWithItsCode) {
  HttpRig rig;
  auto response = rig.post("/v1/score", test::candidate("slow", "FAKE_SLEEP_MS=10000", 0.2));
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  ScoreReply reply = reply_of(response);
  EXPECT_EQ(reply.status, RequestStatus::timeout);
  EXPECT_EQ(reply.scored.error, ErrorCode::request_timeout);
}

TEST(ServeHttp, ABadBodyIs400WithTheSameKeys) {
  HttpRig rig;
  auto response = rig.client().Post("/v1/score", "{not json", "application/json");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 400);
  EXPECT_EQ(reply_of(response).scored.error, ErrorCode::bad_request);
}

TEST(ServeHttp, HealthAndMetricsDescribeTheService) {
  HttpRig rig;
  reply_of(rig.post("/v1/score", test::candidate("m1")));
  reply_of(rig.post("/v1/score", test::candidate("m2", "FAKE_INFRA")));
  auto health = rig.client("").Get("/healthz");
  ASSERT_TRUE(health);
  auto doc = nlohmann::json::parse(health->body);
  EXPECT_EQ(doc["status"], "ok");
  EXPECT_EQ(doc["workers"], 1);
  auto metrics = rig.client("").Get("/metrics");
  ASSERT_TRUE(metrics);
  for (const char* line :
       {"stitchcuda_serve_queue_depth 0", "stitchcuda_serve_in_flight 0",
        "stitchcuda_serve_completed_total{status=\"done\"} 1",
        "stitchcuda_serve_completed_total{status=\"error\"} 1", "stitchcuda_serve_failed_total 1",
        "stitchcuda_serve_latency_seconds_count 2",
        "stitchcuda_serve_latency_seconds_bucket{le=\"+Inf\"} 2",
        "# TYPE stitchcuda_serve_latency_seconds histogram"})
    EXPECT_NE(metrics->body.find(line), std::string::npos) << line << "\n" << metrics->body;
}

TEST(ServeHttp, WhileShuttingDownNewWorkIs503AndPollsAreStillAnswered) {
  HttpRig rig;
  reply_of(rig.post("/v1/score", test::candidate("before")));
  rig.service().shutdown(0);
  auto refused = rig.post("/v1/submit", test::candidate("after"));
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "7");
  EXPECT_EQ(reply_of(refused).scored.error, ErrorCode::shutting_down);
  EXPECT_EQ(rig.client("").Get("/healthz")->status, 503);
  EXPECT_EQ(reply_of(rig.client().Get("/v1/requests/before")).status, RequestStatus::done);
}

TEST(ServeConstantTimeEqual, ComparesWholeStrings) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
  EXPECT_FALSE(constant_time_equal("", "a"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

}  // namespace
}  // namespace stitch::serve
