// CUPTI activity tracing for `stitch-runner --profile`: the GPU timeline of one forward (kernels
// with their launch configuration, copies, memsets) and, in a second forward, the runtime/driver
// API calls that launched them. libcupti is loaded with dlopen by the loader LaunchCounter uses too
// (cupti_activity.h), so the runner still works where CUPTI is missing; then `available()` is
// false and `detail()` says why.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace stitch::runner {

class CuptiActivity;

// When and where a GPU activity ran: timestamps are CUPTI's (ns, the clock of
// ActivityTracer::now()); the correlation id ties it to the API call that launched it.
struct TraceSpan {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t stream_id = 0;
  uint32_t correlation_id = 0;
};

struct TracedKernel : TraceSpan {
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint32_t registers_per_thread = 0;
  int32_t static_shared_bytes = 0;
  int32_t dynamic_shared_bytes = 0;
  uint32_t local_bytes_per_thread = 0;
  std::string mangled_name;
};

struct TracedCopy : TraceSpan {
  uint64_t bytes = 0;
  std::string direction;  // "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", ...
};

struct TracedMemset : TraceSpan {
  uint64_t bytes = 0;
  uint32_t value = 0;
};

// A runtime or driver API call (host side: no stream), on the same clock.
struct TracedApiCall {
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t correlation_id = 0;
  bool driver = false;  // driver API (cu*) rather than runtime API (cuda*)
  std::string name;     // "cudaLaunchKernel" (CUPTI's version suffix removed)
};

struct TraceRecords {
  std::vector<TracedKernel> kernels;
  std::vector<TracedCopy> copies;
  std::vector<TracedMemset> memsets;
  std::vector<TracedApiCall> api_calls;
};

// Which activity kinds a window records.
struct TraceKinds {
  bool gpu = true;   // CONCURRENT_KERNEL, MEMCPY, MEMSET
  bool api = false;  // RUNTIME, DRIVER (adds host overhead to every call: traced separately)
};

class ActivityTracer {
 public:
  ActivityTracer();
  ~ActivityTracer();
  ActivityTracer(const ActivityTracer&) = delete;
  ActivityTracer& operator=(const ActivityTracer&) = delete;

  // Loads CUPTI and registers the buffer callbacks; enables nothing yet. Call after the CUDA
  // context exists.
  bool start();
  bool available() const { return available_; }
  const std::string& detail() const { return detail_; }

  // Enables the kinds for the next window; false (with detail()) when CUPTI refuses one.
  bool enable(const TraceKinds& kinds);
  void disable();

  uint64_t now() const;  // CUPTI's clock; 0 when unavailable
  // Flushes CUPTI's buffers (call after a device synchronize) and hands over every record
  // received since the last call.
  TraceRecords take();
  // Records dropped because a buffer could not be allocated.
  uint64_t dropped_buffers() const;

 private:
  bool available_ = false;
  std::string detail_ = "not started";
  TraceKinds enabled_{false, false};
  std::unique_ptr<CuptiActivity> cupti_;
};

// "scale_shift_relu_vec4(float4 const*, ...)" from "_Z21scale_shift_relu_vec4P...": the C++
// demangling when the name is a mangled one, else the name unchanged (extern "C" kernels).
std::string demangle_kernel_name(const std::string& mangled);

}  // namespace stitch::runner
