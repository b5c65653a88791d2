// CUPTI activity tracing through dlopen; see profile_trace.h. CUPTI hands back filled buffers on
// its own thread through plain C callbacks, so records go to a mutex-guarded store at file scope.
// Record layouts are those of the cupti_activity.h this file is compiled against (CUDA 13:
// Kernel10, Memcpy6, Memset4, API): CUPTI only appends fields between versions, and the runner
// loads the libcupti of the same toolkit first.
#include "runner/profile_trace.h"

#include <cupti.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#ifndef STITCH_CUPTI_LIBRARY_DIR
#define STITCH_CUPTI_LIBRARY_DIR ""
#endif

namespace stitch::runner {

struct ActivityTracer::Api {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetTimestamp) timestamp = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
  decltype(&cuptiGetCallbackName) callback_name = nullptr;  // optional
};

namespace {

constexpr size_t kBufferBytes = 8 << 20;

std::mutex store_mutex;
TraceRecords store;
std::atomic<uint64_t> dropped_buffer_count{0};
decltype(&cuptiActivityGetNextRecord) next_record_fn = nullptr;
decltype(&cuptiGetCallbackName) callback_name_fn = nullptr;

std::string copy_direction(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "unknown";
  }
}

// "cudaLaunchKernel_v7000" → "cudaLaunchKernel".
std::string api_name(CUpti_CallbackDomain domain, uint32_t cbid) {
  const char* name = nullptr;
  if (callback_name_fn && callback_name_fn(domain, cbid, &name) == CUPTI_SUCCESS && name) {
    std::string text = name;
    size_t suffix = text.rfind("_v");
    if (suffix != std::string::npos && suffix + 2 < text.size() &&
        text.find_first_not_of("0123456789", suffix + 2) == std::string::npos)
      text.resize(suffix);
    return text;
  }
  return fmt::format("{}#{}", domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime", cbid);
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
  if (!*buffer) ++dropped_buffer_count;
}

void CUPTIAPI on_buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  TraceRecords records;
  CUpti_Activity* record = nullptr;
  while (next_record_fn && next_record_fn(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        TracedKernel kernel;
        kernel.start_ns = k->start;
        kernel.end_ns = k->end;
        kernel.stream_id = k->streamId;
        kernel.correlation_id = k->correlationId;
        kernel.grid[0] = k->gridX, kernel.grid[1] = k->gridY, kernel.grid[2] = k->gridZ;
        kernel.block[0] = k->blockX, kernel.block[1] = k->blockY, kernel.block[2] = k->blockZ;
        kernel.registers_per_thread = k->registersPerThread;
        kernel.static_shared_bytes = k->staticSharedMemory;
        kernel.dynamic_shared_bytes = k->dynamicSharedMemory;
        kernel.local_bytes_per_thread = k->localMemoryPerThread;
        kernel.mangled_name = k->name ? std::string(k->name, strnlen(k->name, 4096)) : "(unnamed)";
        records.kernels.push_back(std::move(kernel));
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        records.copies.push_back({m->start, m->end, m->bytes, m->streamId, m->correlationId,
                                  copy_direction(m->copyKind)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        records.memsets.push_back(
            {m->start, m->end, m->bytes, m->value, m->streamId, m->correlationId});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME:
      case CUPTI_ACTIVITY_KIND_DRIVER: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(record);
        bool driver = record->kind == CUPTI_ACTIVITY_KIND_DRIVER;
        records.api_calls.push_back(
            {a->start, a->end, a->correlationId, driver,
             api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid)});
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
  std::lock_guard<std::mutex> lock(store_mutex);
  auto append = [](auto& into, auto& from) {
    into.insert(into.end(), std::make_move_iterator(from.begin()),
                std::make_move_iterator(from.end()));
  };
  append(store.kernels, records.kernels);
  append(store.copies, records.copies);
  append(store.memsets, records.memsets);
  append(store.api_calls, records.api_calls);
}

template <typename T>
bool resolve(void* library, const char* name, T& out) {
  out = reinterpret_cast<T>(dlsym(library, name));
  return out != nullptr;
}

constexpr CUpti_ActivityKind kGpuKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                            CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
constexpr CUpti_ActivityKind kApiKinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME,
                                            CUPTI_ACTIVITY_KIND_DRIVER};

}  // namespace

ActivityTracer::ActivityTracer() : api_(std::make_unique<Api>()) {}

ActivityTracer::~ActivityTracer() {
  if (available_) {
    disable();
    api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  // The library stays loaded: CUPTI's threads may still run its code until the process exits.
}

bool ActivityTracer::start() {
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
  resolve(library_, "cuptiGetCallbackName", api.callback_name);
  next_record_fn = api.next_record;
  callback_name_fn = api.callback_name;
  CUptiResult result = api.register_callbacks(on_buffer_requested, on_buffer_completed);
  if (result != CUPTI_SUCCESS) {
    const char* text = nullptr;
    api.result_string(result, &text);
    detail_ = fmt::format("cuptiActivityRegisterCallbacks: {}", text ? text : "unknown error");
    return false;
  }
  available_ = true;
  detail_ = "CUPTI activity API";
  return true;
}

bool ActivityTracer::enable(const TraceKinds& kinds) {
  if (!available_) return false;
  disable();
  auto turn_on = [&](CUpti_ActivityKind kind, const char* label) {
    CUptiResult result = api_->enable(kind);
    if (result == CUPTI_SUCCESS) return true;
    const char* text = nullptr;
    api_->result_string(result, &text);
    detail_ = fmt::format("cuptiActivityEnable({}): {}", label, text ? text : "unknown error");
    return false;
  };
  bool ok = true;
  if (kinds.gpu) {
    ok = ok && turn_on(kGpuKinds[0], "CONCURRENT_KERNEL") && turn_on(kGpuKinds[1], "MEMCPY") &&
         turn_on(kGpuKinds[2], "MEMSET");
  }
  if (ok && kinds.api) ok = turn_on(kApiKinds[0], "RUNTIME") && turn_on(kApiKinds[1], "DRIVER");
  enabled_ = kinds;
  if (!ok) disable();
  return ok;
}

void ActivityTracer::disable() {
  if (!available_) return;
  // Disabling a kind that is not enabled is harmless; every kind is turned off so that a failed
  // enable() leaves nothing half on.
  for (CUpti_ActivityKind kind : kGpuKinds)
    api_->disable(kind);
  for (CUpti_ActivityKind kind : kApiKinds)
    api_->disable(kind);
  enabled_ = {false, false};
}

uint64_t ActivityTracer::now() const {
  if (!available_) return 0;
  uint64_t timestamp = 0;
  api_->timestamp(&timestamp);
  return timestamp;
}

TraceRecords ActivityTracer::take() {
  if (!available_) return {};
  api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(store_mutex);
  TraceRecords taken = std::move(store);
  store = TraceRecords{};
  return taken;
}

uint64_t ActivityTracer::dropped_buffers() const {
  return dropped_buffer_count.load();
}

std::string demangle_kernel_name(const std::string& mangled) {
  if (!mangled.starts_with("_Z")) return mangled;
  int status = 0;
  char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !text) {
    std::free(text);
    return mangled;
  }
  std::string demangled = text;
  std::free(text);
  return demangled;
}

}  // namespace stitch::runner
