// CUPTI activity tracing through dlopen; see launch_counter.h. CUPTI hands back filled buffers on
// its own thread through plain C callbacks, so records go to a mutex-guarded list at file scope.
#include "runner/launch_counter.h"

#include "runner/runner_kernels.h"

#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#ifndef STITCH_CUPTI_LIBRARY_DIR
#define STITCH_CUPTI_LIBRARY_DIR ""
#endif

namespace stitch::runner {

struct LaunchCounter::Api {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

namespace {

constexpr size_t kBufferBytes = 8 << 20;

std::mutex records_mutex;
std::vector<KernelRecord> pending_records;
decltype(&cuptiActivityGetNextRecord) next_record_fn = nullptr;

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<KernelRecord> records;
  CUpti_Activity* record = nullptr;
  while (next_record_fn && next_record_fn(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL)
      continue;
    // start/end/streamId/name sit at the same offsets in every kernel record version (4 to 10).
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel4*>(record);
    records.push_back(
        {kernel->start, kernel->end, kernel->streamId, kernel->name ? kernel->name : "(unnamed)"});
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(records_mutex);
  pending_records.insert(pending_records.end(), records.begin(), records.end());
}

template <typename T>
bool resolve(void* library, const char* name, T& out) {
  out = reinterpret_cast<T>(dlsym(library, name));
  return out != nullptr;
}

}  // namespace

LaunchCounter::LaunchCounter() : api_(std::make_unique<Api>()) {}

LaunchCounter::~LaunchCounter() {
  if (available_) {
    api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    set_enabled(false);
  }
  // The library stays loaded: CUPTI's threads may still run its code until the process exits.
}

bool LaunchCounter::start() {
  std::vector<std::string> candidates = {"libcupti.so.13", "libcupti.so"};
  if (std::string(STITCH_CUPTI_LIBRARY_DIR).size())
    candidates.push_back(std::string(STITCH_CUPTI_LIBRARY_DIR) + "/libcupti.so");
  candidates.push_back("/usr/local/cuda/lib64/libcupti.so");
  candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  std::string errors;
  for (const auto& name : candidates) {
    library_ = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_) break;
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", dlerror());
  }
  if (!library_) {
    detail_ = "libcupti not found: " + errors;
    return false;
  }
  Api& api = *api_;
  if (!resolve(library_, "cuptiActivityRegisterCallbacks", api.register_callbacks) ||
      !resolve(library_, "cuptiActivityEnable", api.enable) ||
      !resolve(library_, "cuptiActivityDisable", api.disable) ||
      !resolve(library_, "cuptiActivityFlushAll", api.flush_all) ||
      !resolve(library_, "cuptiActivityGetNextRecord", api.next_record) ||
      !resolve(library_, "cuptiGetTimestamp", api.timestamp) ||
      !resolve(library_, "cuptiGetResultString", api.result_string)) {
    detail_ = "libcupti lacks an activity API symbol";
    return false;
  }
  next_record_fn = api.next_record;
  auto describe = [&](CUptiResult result) {
    const char* text = nullptr;
    api.result_string(result, &text);
    return std::string(text ? text : "unknown CUPTI error");
  };
  CUptiResult result = api.register_callbacks(on_buffer_requested, on_buffer_completed);
  if (result != CUPTI_SUCCESS) {
    detail_ = "cuptiActivityRegisterCallbacks: " + describe(result);
    return false;
  }
  result = api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (result != CUPTI_SUCCESS) {
    detail_ = "cuptiActivityEnable(CONCURRENT_KERNEL): " + describe(result);
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
    api_->enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  else
    api_->disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  enabled_ = enabled;
}

uint64_t LaunchCounter::now() const {
  if (!available_) return 0;
  uint64_t timestamp = 0;
  api_->timestamp(&timestamp);
  return timestamp;
}

WindowSummary LaunchCounter::collect(uint64_t begin_ns, uint64_t end_ns) {
  WindowSummary summary;
  if (!available_) return summary;
  api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
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
