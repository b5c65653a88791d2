// CuptiActivity: the library search, the resolved functions and the buffer callbacks; see
// cupti_activity.h.
#include "runner/cupti_activity.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#ifndef STITCH_CUPTI_LIBRARY_DIR
#define STITCH_CUPTI_LIBRARY_DIR ""
#endif

namespace stitch::runner {
namespace {

constexpr size_t kBufferBytes = 8 << 20;

// The resolved functions: one set per process, as CUPTI's callbacks are.
struct Api {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;  // optional
};

Api api;
std::atomic<CuptiActivity::RecordSink> sink{nullptr};
std::atomic<uint64_t> dropped_buffer_count{0};

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
  if (!*buffer) ++dropped_buffer_count;
}

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  std::vector<const CUpti_Activity*> records;
  CUpti_Activity* record = nullptr;
  while (api.next_record && api.next_record(buffer, valid, &record) == CUPTI_SUCCESS)
    records.push_back(record);
  if (CuptiActivity::RecordSink to = sink.load()) to(records);
  std::free(buffer);
}

template <typename T>
bool resolve(void* library, const char* name, T& out) {
  out = reinterpret_cast<T>(dlsym(library, name));
  return out != nullptr;
}

// libcupti of the toolkit the runner was built with first, then the usual places.
void* open_library(std::string& errors) {
  std::vector<std::string> candidates = {"libcupti.so.13", "libcupti.so"};
  if (std::string(STITCH_CUPTI_LIBRARY_DIR).size())
    candidates.push_back(std::string(STITCH_CUPTI_LIBRARY_DIR) + "/libcupti.so");
  candidates.push_back("/usr/local/cuda/lib64/libcupti.so");
  candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  for (const auto& name : candidates) {
    if (void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return library;
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", dlerror());
  }
  return nullptr;
}

}  // namespace

bool CuptiActivity::start(RecordSink record_sink) {
  std::string errors;
  void* library = open_library(errors);
  if (!library) {
    detail_ = "libcupti not found: " + errors;
    return false;
  }
  if (!resolve(library, "cuptiActivityRegisterCallbacks", api.register_callbacks) ||
      !resolve(library, "cuptiActivityEnable", api.enable) ||
      !resolve(library, "cuptiActivityDisable", api.disable) ||
      !resolve(library, "cuptiActivityFlushAll", api.flush_all) ||
      !resolve(library, "cuptiActivityGetNextRecord", api.next_record) ||
      !resolve(library, "cuptiGetTimestamp", api.timestamp) ||
      !resolve(library, "cuptiGetResultString", api.result_string)) {
    detail_ = "libcupti lacks an activity API symbol";
    return false;
  }
  resolve(library, "cuptiGetCallbackName", api.callback_name);
  sink.store(record_sink);
  CUptiResult result = api.register_callbacks(on_buffer_requested, on_buffer_completed);
  if (result != CUPTI_SUCCESS) {
    detail_ = "cuptiActivityRegisterCallbacks: " + describe(result);
    return false;
  }
  available_ = true;
  detail_ = "CUPTI activity API";
  return true;
}

std::string CuptiActivity::describe(CUptiResult result) const {
  const char* text = nullptr;
  api.result_string(result, &text);
  return text ? text : "unknown CUPTI error";
}

std::string CuptiActivity::enable(CUpti_ActivityKind kind, const char* label) const {
  if (!available_) return detail_;
  CUptiResult result = api.enable(kind);
  if (result == CUPTI_SUCCESS) return "";
  return fmt::format("cuptiActivityEnable({}): {}", label, describe(result));
}

void CuptiActivity::disable(CUpti_ActivityKind kind) const {
  if (available_) api.disable(kind);
}

void CuptiActivity::flush() const {
  if (available_) api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

uint64_t CuptiActivity::now() const {
  if (!available_) return 0;
  uint64_t timestamp = 0;
  api.timestamp(&timestamp);
  return timestamp;
}

const char* CuptiActivity::callback_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  const char* name = nullptr;
  if (!api.callback_name || api.callback_name(domain, cbid, &name) != CUPTI_SUCCESS) return nullptr;
  return name;
}

uint64_t CuptiActivity::dropped_buffers() {
  return dropped_buffer_count.load();
}

}  // namespace stitch::runner
