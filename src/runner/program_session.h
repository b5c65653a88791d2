// What both runner modes share — a verification (session.h) and a profile (profile_session.h):
// the device set-up, the candidate's load and stitch_init, the checks after a forward, the params,
// the seed, and the stitch_destroy at the end. Each mode derives from ProgramSession and adds its
// phases.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/device_memory.h"
#include "runner/options.h"
#include "runner/program_library.h"
#include "runner/report.h"
#include "runner/runner_kernels.h"
#include "runner/spec.h"
#include "runner/watchdog.h"

namespace stitch::runner {

enum class Flow { proceed, stop };

// Propagates a runner-side Error and stops at Flow::stop (the candidate failed; status is set).
#define STITCH_FLOW(expr)                                \
  do {                                                   \
    auto stitch_flow_ = (expr);                          \
    if (!stitch_flow_.ok()) return stitch_flow_.error(); \
    if (*stitch_flow_ == Flow::stop) return Flow::stop;  \
  } while (0)

using Clock = std::chrono::steady_clock;

inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The random fill for a declared distribution (`fixed` without a judge's value: one normal draw).
FillKind fill_kind(DistributionKind kind);
// The random fill for a tensor of `dtype` with no distribution of its own (self-test params):
// normal for floats, bernoulli for bool, randint for other integers.
FillKind dtype_fill_kind(stitch_dtype dtype);

class ProgramSession {
 public:
  ProgramSession(const RunnerOptions& options, RunSpec spec, ReportBuilder& report,
                 Watchdog& watchdog);
  ProgramSession(const ProgramSession&) = delete;
  ProgramSession& operator=(const ProgramSession&) = delete;

  // After runner.json is written: stitch_destroy, and no process of the program's left behind.
  void finish();

 protected:
  // Runs a mode's phases; a runner-side Error becomes the report's status (cuda_error once the
  // candidate is loaded, setup_failed before).
  void run_phases(const std::function<Result<Flow>()>& phases);
  // The device, its context, a blocking stream, the start and end events and the L2 flush buffer.
  // Flow::stop (no_device) when there is no GPU; `props` describes the device.
  Result<Flow> open_device(cudaDeviceProp& props);
  // The device as runner.json (and the profile) describe it.
  static nlohmann::json device_json(int index, const cudaDeviceProp& props);
  // The seccomp filter, when options ask for it, and its report.
  void install_seccomp();
  // A param's buffer filled: drawn at random when `generate` (no judge), else copied from the
  // judge's memory (the program may keep the pointers it is given, and must never hold the
  // judge's).
  Status fill_param(void* data, size_t index, bool generate);
  // dlopen of the program under the watchdog (`after_dlopen` runs whatever dlopen returned: static
  // initialisers have run), then the ABI version check.
  Result<Flow> load_candidate(const std::function<void()>& after_dlopen = {});
  // stitch_init under the watchdog; with `synchronize`, the device synchronize inside the same
  // watchdog scope and its error checked. Sets init_ms_.
  Result<Flow> init_candidate(bool synchronize);
  // After a forward returned `code` and the device synchronize `sync`: forward_failed or
  // cuda_error, or Flow::proceed.
  Result<Flow> check_forward(int code, cudaError_t sync, const std::string& label);
  // cuda_error when `status` (or, when it is a success, cudaGetLastError) is an error.
  Result<Flow> check_cuda(cudaError_t status, const std::string& label);
  void stop_with(RunStatus status, std::string message);
  uint64_t next_seed();

  const RunnerOptions& options_;
  RunSpec spec_;
  ReportBuilder& report_;
  Watchdog& watchdog_;

  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_event_ = nullptr;
  cudaEvent_t end_event_ = nullptr;
  DeviceBuffer l2_flush_;
  IpcMapper ipc_;
  std::vector<stitch_tensor> param_views_;

  ProgramLibrary program_;
  void* state_ = nullptr;
  bool candidate_loaded_ = false;
  bool initialized_ = false;
  double init_ms_ = 0;

 private:
  uint64_t rng_state_ = 0;
};

}  // namespace stitch::runner
