// ServiceMetrics (metrics.h).
#include "serve/metrics.h"

#include <fmt/format.h>

namespace stitch::serve {

void ServiceMetrics::finished(RequestStatus status, double latency_s) {
  std::lock_guard lock(mutex_);
  ++finished_[status];
  ++latency_count_;
  latency_sum_ += latency_s;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i)
    if (latency_s <= kLatencyBuckets[i]) {
      ++buckets_[i];
      break;
    }
}

void ServiceMetrics::refused(ErrorCode error) {
  std::lock_guard lock(mutex_);
  ++refused_[error];
}

void ServiceMetrics::accepted() {
  std::lock_guard lock(mutex_);
  ++accepted_;
}

int64_t ServiceMetrics::count_finished(RequestStatus status) const {
  std::lock_guard lock(mutex_);
  auto it = finished_.find(status);
  return it == finished_.end() ? 0 : it->second;
}

int64_t ServiceMetrics::count_refused(ErrorCode error) const {
  std::lock_guard lock(mutex_);
  auto it = refused_.find(error);
  return it == refused_.end() ? 0 : it->second;
}

std::string ServiceMetrics::prometheus(const Gauges& gauges) const {
  std::lock_guard lock(mutex_);
  std::string out;
  auto metric = [&out](const char* name, const char* type, const char* help) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  };
  metric("stitchcuda_serve_queue_depth", "gauge", "Accepted requests waiting for a worker.");
  out += fmt::format("stitchcuda_serve_queue_depth {}\n", gauges.queue_depth);
  metric("stitchcuda_serve_in_flight", "gauge", "Requests being scored now.");
  out += fmt::format("stitchcuda_serve_in_flight {}\n", gauges.in_flight);
  metric("stitchcuda_serve_workers", "gauge", "Scoring workers (one per GPU).");
  out += fmt::format("stitchcuda_serve_workers {}\n", gauges.workers);
  metric("stitchcuda_serve_draining", "gauge", "1 while shutting down.");
  out += fmt::format("stitchcuda_serve_draining {}\n", gauges.draining ? 1 : 0);
  metric("stitchcuda_serve_accepted_total", "counter", "Requests accepted and persisted.");
  out += fmt::format("stitchcuda_serve_accepted_total {}\n", accepted_);
  metric("stitchcuda_serve_completed_total", "counter", "Requests that reached a final status.");
  for (RequestStatus status : {RequestStatus::done, RequestStatus::error, RequestStatus::timeout}) {
    auto it = finished_.find(status);
    out += fmt::format("stitchcuda_serve_completed_total{{status=\"{}\"}} {}\n", enum_name(status),
                       it == finished_.end() ? 0 : it->second);
  }
  metric("stitchcuda_serve_failed_total", "counter",
         "Requests that could not be scored (status error or timeout).");
  int64_t failed = 0;
  for (RequestStatus status : {RequestStatus::error, RequestStatus::timeout})
    if (auto it = finished_.find(status); it != finished_.end()) failed += it->second;
  out += fmt::format("stitchcuda_serve_failed_total {}\n", failed);
  metric("stitchcuda_serve_refused_total", "counter", "Requests refused before acceptance.");
  for (const auto& [error, count] : refused_)
    out += fmt::format("stitchcuda_serve_refused_total{{reason=\"{}\"}} {}\n", enum_name(error),
                       count);
  metric("stitchcuda_serve_latency_seconds", "histogram", "Accept to final reply.");
  int64_t cumulative = 0;
  for (size_t i = 0; i < kLatencyBuckets.size(); ++i) {
    cumulative += buckets_[i];
    out += fmt::format("stitchcuda_serve_latency_seconds_bucket{{le=\"{}\"}} {}\n",
                       kLatencyBuckets[i], cumulative);
  }
  out += fmt::format("stitchcuda_serve_latency_seconds_bucket{{le=\"+Inf\"}} {}\n", latency_count_);
  out += fmt::format("stitchcuda_serve_latency_seconds_sum {}\n", latency_sum_);
  out += fmt::format("stitchcuda_serve_latency_seconds_count {}\n", latency_count_);
  return out;
}

}  // namespace stitch::serve
