// CUPTI activity tracing; see profile_trace.h. CUPTI hands back filled buffers on its own thread
// (cupti_activity.h), so records go to a mutex-guarded store at file scope.
// Record layouts are those of the cupti_activity.h this file is compiled against (CUDA 13:
// Kernel10, Memcpy6, Memset4, API): CUPTI only appends fields between versions, and the runner
// loads the libcupti of the same toolkit first.
#include "runner/profile_trace.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "runner/cupti_activity.h"

namespace stitch::runner {
namespace {

std::mutex store_mutex;
TraceRecords store;

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
  if (const char* name = CuptiActivity::callback_name(domain, cbid)) {
    std::string text = name;
    size_t suffix = text.rfind("_v");
    if (suffix != std::string::npos && suffix + 2 < text.size() &&
        text.find_first_not_of("0123456789", suffix + 2) == std::string::npos)
      text.resize(suffix);
    return text;
  }
  return fmt::format("{}#{}", domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime", cbid);
}

void keep_trace_records(std::span<const CUpti_Activity* const> activities) {
  TraceRecords records;
  for (const CUpti_Activity* record : activities) {
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
        records.copies.push_back({{m->start, m->end, m->streamId, m->correlationId},
                                  m->bytes,
                                  copy_direction(m->copyKind)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        records.memsets.push_back(
            {{m->start, m->end, m->streamId, m->correlationId}, m->bytes, m->value});
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

constexpr CUpti_ActivityKind kGpuKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                            CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET};
constexpr CUpti_ActivityKind kApiKinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME,
                                            CUPTI_ACTIVITY_KIND_DRIVER};

}  // namespace

ActivityTracer::ActivityTracer() : cupti_(std::make_unique<CuptiActivity>()) {}

ActivityTracer::~ActivityTracer() {
  if (available_) {
    disable();
    cupti_->flush();
  }
}

bool ActivityTracer::start() {
  available_ = cupti_->start(keep_trace_records);
  detail_ = cupti_->detail();
  return available_;
}

bool ActivityTracer::enable(const TraceKinds& kinds) {
  if (!available_) return false;
  disable();
  auto turn_on = [&](CUpti_ActivityKind kind, const char* label) {
    std::string refused = cupti_->enable(kind, label);
    if (!refused.empty()) detail_ = refused;
    return refused.empty();
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
    cupti_->disable(kind);
  for (CUpti_ActivityKind kind : kApiKinds)
    cupti_->disable(kind);
  enabled_ = {false, false};
}

uint64_t ActivityTracer::now() const {
  return cupti_->now();
}

TraceRecords ActivityTracer::take() {
  if (!available_) return {};
  cupti_->flush();
  std::lock_guard<std::mutex> lock(store_mutex);
  TraceRecords taken = std::move(store);
  store = TraceRecords{};
  return taken;
}

uint64_t ActivityTracer::dropped_buffers() const {
  return CuptiActivity::dropped_buffers();
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
