// When to try a chat request again and how long to wait first: exponential backoff with jitter,
// or the server's Retry-After (delta-seconds or an HTTP date). The clock and the sleep are behind
// RetryClock so that tests record the waits instead of sleeping them.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

namespace stitch::llm {

class RetryClock {
 public:
  virtual ~RetryClock() = default;
  virtual double now_s() = 0;                                    // monotonic seconds, for latencies
  virtual std::chrono::system_clock::time_point wall_now() = 0;  // for Retry-After dates
  virtual void sleep_s(double seconds) = 0;
};

class SystemRetryClock : public RetryClock {
 public:
  double now_s() override;
  std::chrono::system_clock::time_point wall_now() override;
  void sleep_s(double seconds) override;
};

struct BackoffPolicy {
  double base_s = 1;               // the first retry waits base_s × [0.5, 1)
  double max_s = 60;               // the backoff never waits longer
  double max_retry_after_s = 300;  // a longer Retry-After is cut to this
};

// The wait before retry number `retry` (0 for the first): min(max_s, base_s × 2^retry), scaled
// by 0.5 + unit_random / 2 so that many clients refused at once do not come back at once.
double backoff_delay_s(const BackoffPolicy& policy, int retry, double unit_random);

// A Retry-After value in seconds from `now`: "120" or "Wed, 21 Oct 2015 07:28:00 GMT" (a past
// date: 0). nullopt for anything else.
std::optional<double> parse_retry_after(std::string_view value,
                                        std::chrono::system_clock::time_point now);

}  // namespace stitch::llm
