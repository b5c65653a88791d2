// CUPTI's activity API, loaded with dlopen: the one loader behind the launch counter
// (launch_counter.h) and the profile tracer (profile_trace.h). It finds libcupti, resolves the
// activity functions, and registers the buffer callbacks, which hand every completed buffer's
// records to the user's sink. CUPTI calls back on its own thread through plain C callbacks without
// user data, so there is one sink per process — the two users are never started in the same
// process (profile mode replaces the verification phases). Where CUPTI is missing, start() is
// false and detail() says why; the runner works on without it.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <span>
#include <string>

namespace stitch::runner {

class CuptiActivity {
 public:
  // Called on CUPTI's thread with the records of one completed buffer.
  using RecordSink = void (*)(std::span<const CUpti_Activity* const> records);

  // Loads libcupti and registers the buffer callbacks (call after the CUDA context exists);
  // enables no activity kind. The library stays loaded for the life of the process: CUPTI's
  // threads may still run its code until the process exits.
  bool start(RecordSink sink);
  bool available() const { return available_; }
  const std::string& detail() const { return detail_; }

  // Both an error text on failure ("cuptiActivityEnable(MEMCPY): ..."), empty on success.
  std::string enable(CUpti_ActivityKind kind, const char* label) const;
  void disable(CUpti_ActivityKind kind) const;
  // Hands every buffer CUPTI holds to the sink (call after a device synchronize).
  void flush() const;
  uint64_t now() const;  // CUPTI's clock; 0 when unavailable

  // "cudaLaunchKernel_v7000" for a runtime or driver callback id; nullptr when unknown or when
  // this libcupti lacks cuptiGetCallbackName. Safe to call from the sink.
  static const char* callback_name(CUpti_CallbackDomain domain, uint32_t cbid);
  // Buffers CUPTI asked for that could not be allocated (their records are lost).
  static uint64_t dropped_buffers();

 private:
  std::string describe(CUptiResult result) const;

  bool available_ = false;
  std::string detail_ = "not started";
};

}  // namespace stitch::runner
