// Kernel launch counting on CUPTI's activity records; see launch_counter.h. CUPTI hands back filled
// buffers on its own thread (cupti_activity.h), so records go to a mutex-guarded list at file scope.
#include "runner/launch_counter.h"

#include <algorithm>
#include <mutex>

#include "runner/cupti_activity.h"
#include "runner/runner_kernels.h"

namespace stitch::runner {
namespace {

std::mutex records_mutex;
std::vector<KernelRecord> pending_records;

void keep_kernel_records(std::span<const CUpti_Activity* const> activities) {
  std::vector<KernelRecord> records;
  for (const CUpti_Activity* record : activities) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    // start/end/streamId/name sit at the same offsets in every kernel record version (4 to 10).
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel4*>(record);
    records.push_back(
        {kernel->start, kernel->end, kernel->streamId, kernel->name ? kernel->name : "(unnamed)"});
  }
  std::lock_guard<std::mutex> lock(records_mutex);
  pending_records.insert(pending_records.end(), records.begin(), records.end());
}

}  // namespace

LaunchCounter::LaunchCounter() : cupti_(std::make_unique<CuptiActivity>()) {}

LaunchCounter::~LaunchCounter() {
  if (available_) {
    cupti_->flush();
    set_enabled(false);
  }
}

bool LaunchCounter::start() {
  if (!cupti_->start(keep_kernel_records)) {
    detail_ = cupti_->detail();
    return false;
  }
  std::string refused = cupti_->enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL");
  if (!refused.empty()) {
    detail_ = refused;
    return false;
  }
  available_ = true;
  enabled_ = true;
  detail_ = "CUPTI activity API (concurrent kernel records)";
  return true;
}

void LaunchCounter::set_enabled(bool enabled) {
  if (!available_ || enabled == enabled_) return;
  if (enabled)
    cupti_->enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL");
  else
    cupti_->disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  enabled_ = enabled;
}

uint64_t LaunchCounter::now() const {
  return available_ ? cupti_->now() : 0;
}

WindowSummary LaunchCounter::collect(uint64_t begin_ns, uint64_t end_ns) {
  WindowSummary summary;
  if (!available_) return summary;
  cupti_->flush();
  std::vector<KernelRecord> records;
  {
    std::lock_guard<std::mutex> lock(records_mutex);
    records.swap(pending_records);
  }
  for (auto& record : records) {
    if (record.start_ns > end_ns) {  // belongs to a later window
      std::lock_guard<std::mutex> lock(records_mutex);
      pending_records.push_back(std::move(record));
      continue;
    }
    if (record.start_ns < begin_ns) continue;  // the runner's own work before the window
    if (record.name.find(kStreamMarkerName) != std::string::npos) {
      summary.marker_start_ns = record.start_ns;
      continue;
    }
    ++summary.launches;
    summary.streams.insert(record.stream_id);
    if (summary.first_start_ns == 0 || record.start_ns < summary.first_start_ns)
      summary.first_start_ns = record.start_ns;
    summary.last_end_ns = std::max(summary.last_end_ns, record.end_ns);
    if (names_.size() < 512 || names_.count(record.name)) {
      std::string name = record.name.size() > 400 ? record.name.substr(0, 400) : record.name;
      ++names_[name];
    }
    summary.kernels.push_back(std::move(record));
  }
  return summary;
}

}  // namespace stitch::runner
