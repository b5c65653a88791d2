// The service's counters and latency histogram, written in Prometheus' text format (version 0.0.4)
// for GET /metrics. Latency is accept → final reply.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "serve/contracts.h"

namespace stitch::serve {

inline constexpr std::array<double, 14> kLatencyBuckets = {0.01, 0.05, 0.1, 0.25, 0.5, 1,   2.5,
                                                           5,    10,   30,  60,   120, 300, 600};

struct Gauges {
  size_t queue_depth = 0;
  size_t in_flight = 0;
  int workers = 0;
  bool draining = false;
};

class ServiceMetrics {
 public:
  // A request reached a final status after `latency_s`.
  void finished(RequestStatus status, double latency_s);
  // A request was refused before acceptance (queue_full, unauthorized, ...).
  void refused(ErrorCode error);
  void accepted();
  int64_t count_finished(RequestStatus status) const;
  int64_t count_refused(ErrorCode error) const;
  std::string prometheus(const Gauges& gauges) const;

 private:
  mutable std::mutex mutex_;
  int64_t accepted_ = 0;
  std::map<RequestStatus, int64_t> finished_;
  std::map<ErrorCode, int64_t> refused_;
  std::array<int64_t, kLatencyBuckets.size()> buckets_{};  // non-cumulative counts
  int64_t latency_count_ = 0;
  double latency_sum_ = 0;
};

}  // namespace stitch::serve
