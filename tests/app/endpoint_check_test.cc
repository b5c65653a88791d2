// doctor's endpoint check over a fake transport: targets shared by several roles are probed once,
// /models and the tiny completion are reported, a failing endpoint says why.
#include <gtest/gtest.h>

#include "app/endpoint_check.h"

namespace stitch::app {
namespace {

// Answers /models and /chat/completions of one base URL; anything else is refused.
class FakeTransport : public llm::HttpTransport {
 public:
  llm::HttpResponse send(const llm::HttpRequest& request) override {
    urls.push_back(request.url);
    llm::HttpResponse response;
    if (!request.url.starts_with("http://live/v1/")) {
      response.failure = llm::TransportFailure::refused;
      response.failure_message = "Connection refused";
      return response;
    }
    response.status = 200;
    response.body = request.url.ends_with("/models")
                        ? R"({"data": [{"id": "m1"}, {"id": "m2"}]})"
                        : R"({"model": "m1", "choices": [{"message": {"content": "Hi there you"},
                              "finish_reason": "length"}]})";
    return response;
  }
  std::vector<std::string> urls;
};

class StillClock : public llm::RetryClock {
 public:
  double now_s() override { return now += 0.25; }
  std::chrono::system_clock::time_point wall_now() override { return {}; }
  void sleep_s(double) override {}
  double now = 0;
};

EndpointTarget target(std::string roles, std::string base, std::string model = "") {
  EndpointTarget out;
  out.roles = std::move(roles);
  out.endpoint.api_base = std::move(base);
  out.model = std::move(model);
  return out;
}

TEST(EndpointCheck, MergesRolesThatShareAnEndpoint) {
  auto merged = merge_endpoint_targets({target("planner", "http://live/v1"),
                                        target("coder", "http://live/v1"),
                                        target("verifier", "http://live/v1", "m2")});
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].roles, "planner, coder");
  EXPECT_EQ(merged[1].roles, "verifier");
  EXPECT_EQ(endpoint_targets_from_flags({"a", "b"}, "KEY", "m").size(), 2u);
  EXPECT_EQ(endpoint_targets_from_flags({"a"}, "KEY", "m")[0].endpoint.api_key_env, "KEY");
}

TEST(EndpointCheck, ReportsWhatAnswered) {
  FakeTransport transport;
  StillClock clock;
  auto checks = check_endpoints(
      {target("coder", "http://live/v1"), target("planner", "http://dead/v1", "m")}, transport,
      clock);
  ASSERT_EQ(checks.size(), 2u);
  EXPECT_TRUE(checks[0].probe.ok());
  const std::string line = describe_endpoint_check(checks[0]);
  EXPECT_EQ(line.find("models m1, m2 (250 ms); m1 answered \"Hi there you\" ("), 0u) << line;
  EXPECT_FALSE(checks[1].probe.ok());
  EXPECT_EQ(describe_endpoint_check(checks[1]).find("/models failed: Connection refused"), 0u);
  EXPECT_EQ(transport.urls.front(), "http://live/v1/models");
}

}  // namespace
}  // namespace stitch::app
