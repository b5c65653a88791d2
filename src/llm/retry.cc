#include "llm/retry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>
#include <thread>

namespace stitch::llm {

double SystemRetryClock::now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::chrono::system_clock::time_point SystemRetryClock::wall_now() {
  return std::chrono::system_clock::now();
}

void SystemRetryClock::sleep_s(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

double backoff_delay_s(const BackoffPolicy& policy, int retry, double unit_random) {
  double full = std::min(policy.max_s, policy.base_s * std::ldexp(1.0, std::min(retry, 30)));
  return full * (0.5 + std::clamp(unit_random, 0.0, 1.0) / 2);
}

std::optional<double> parse_retry_after(std::string_view value,
                                        std::chrono::system_clock::time_point now) {
  while (!value.empty() && value.front() == ' ')
    value.remove_prefix(1);
  while (!value.empty() && value.back() == ' ')
    value.remove_suffix(1);
  if (value.empty()) return std::nullopt;
  double seconds = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (error == std::errc() && end == value.data() + value.size())
    return seconds >= 0 && std::isfinite(seconds) ? std::optional(seconds) : std::nullopt;
  // IMF-fixdate (RFC 9110 §5.6.7), the only date form servers send today.
  std::tm parts{};
  std::string text(value);
  const char* parsed = strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &parts);
  if (parsed == nullptr || *parsed != '\0') return std::nullopt;
  auto when = std::chrono::system_clock::from_time_t(timegm(&parts));
  return std::max(0.0, std::chrono::duration<double>(when - now).count());
}

}  // namespace stitch::llm
