// SessionBase: what a verification run (Session) and a profile run (ProfileSession) share — the
// options and report, the seed, device and stream set-up, params, dlopen with the ABI check,
// stitch_init and stitch_destroy — so the two phase sequences cannot drift apart in these steps.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runner/device_memory.h"
#include "runner/options.h"
#include "runner/program_library.h"
#include "runner/report.h"
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

// Milliseconds between two recorded events; -1 when CUDA cannot say (the error is cleared).
double event_ms(cudaEvent_t from, cudaEvent_t to);

class SessionBase {
 public:
  SessionBase(const SessionBase&) = delete;
  SessionBase& operator=(const SessionBase&) = delete;

  // After runner.json is written: stitch_destroy, and no process of the program's left behind.
  void finish();

 protected:
  SessionBase(const RunnerOptions& options, RunSpec spec, ReportBuilder& report,
              Watchdog& watchdog);
  ~SessionBase() = default;

  uint64_t next_seed();  // splitmix64 over the --seed (or a random) start
  void stop_with(RunStatus status, std::string message);

  // Selects the device, creates the context, the stream, start/end events and the L2 flush
  // buffer; fills `props`. Flow::stop (status no_device) when there is no device.
  Result<Flow> open_device(cudaDeviceProp& props);
  // Installs the seccomp filter when options ask for it and records the outcome.
  void install_seccomp();
  // Fills param `index` at `data`: random draws when `random`, else a copy of the judge's tensor.
  Status fill_param(void* data, size_t index, bool random);
  // dlopen of the program and the stitch_abi_version check; sets program_ on success.
  Result<ProgramLibrary> open_program();
  Flow check_abi_version(Result<ProgramLibrary> library);
  // stitch_init on param_views_; `synchronize` also waits for the device inside the watchdog
  // scope and leaves the outcome in `sync`. Reports init_ms.
  Flow run_init(bool synchronize, cudaError_t& sync, double& init_ms);

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
  uint64_t rng_state_ = 0;
};

}  // namespace stitch::runner
