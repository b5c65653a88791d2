// ProgramSession: the device set-up, load, init and finish both runner modes share; see
// program_session.h.
#include "runner/program_session.h"

#include <sys/random.h>

#include <algorithm>

#include "runner/sandbox.h"

namespace stitch::runner {

using nlohmann::json;

FillKind fill_kind(DistributionKind kind) {
  switch (kind) {
    case DistributionKind::uniform:
      return FillKind::uniform;
    case DistributionKind::randint:
      return FillKind::randint;
    case DistributionKind::bernoulli:
      return FillKind::bernoulli;
    default:
      return FillKind::normal;
  }
}

FillKind dtype_fill_kind(stitch_dtype dtype) {
  if (dtype_info(dtype).floating) return FillKind::normal;
  return dtype == STITCH_BOOL ? FillKind::bernoulli : FillKind::randint;
}

ProgramSession::ProgramSession(const RunnerOptions& options, RunSpec spec, ReportBuilder& report,
                               Watchdog& watchdog)
    : options_(options), spec_(std::move(spec)), report_(report), watchdog_(watchdog) {
  if (options_.seed) {
    rng_state_ = *options_.seed;
  } else if (getrandom(&rng_state_, sizeof rng_state_, 0) != sizeof rng_state_) {
    rng_state_ = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  }
}

uint64_t ProgramSession::next_seed() {  // splitmix64
  uint64_t z = (rng_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void ProgramSession::stop_with(RunStatus status, std::string message) {
  if (report_.status() == RunStatus::ok) report_.set_status(status, std::move(message));
}

void ProgramSession::finish() {
  if (initialized_ && state_) {
    WatchdogScope scope(watchdog_, {"stitch_destroy", options_.call_timeout_s, "", "", false});
    program_.destroy(state_);
    cudaDeviceSynchronize();
  }
  kill_processes(list_child_processes());
}

void ProgramSession::run_phases(const std::function<Result<Flow>()>& phases) {
  Result<Flow> result = phases();
  if (!result)
    stop_with(candidate_loaded_ ? RunStatus::cuda_error : RunStatus::setup_failed,
              result.error().message);
}

Result<Flow> ProgramSession::open_device(cudaDeviceProp& props) {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    stop_with(RunStatus::no_device,
              status != cudaSuccess
                  ? fmt::format("no CUDA device: {} ({})", cudaGetErrorName(status),
                                cudaGetErrorString(status))
                  : std::string("no CUDA device: cudaGetDeviceCount found none"));
    return Flow::stop;
  }
  if (spec_.device < 0 || spec_.device >= count)
    return make_error("device {} requested, {} visible", spec_.device, count);
  STITCH_CUDA_TRY(cudaSetDevice(spec_.device), "cudaSetDevice");
  STITCH_CUDA_TRY(cudaFree(nullptr), "creating the CUDA context");
  STITCH_CUDA_TRY(cudaGetDeviceProperties(&props, spec_.device), "cudaGetDeviceProperties");
  // A blocking stream: work a program leaves on the legacy default stream is ordered before it.
  STITCH_CUDA_TRY(cudaStreamCreate(&stream_), "cudaStreamCreate");
  for (cudaEvent_t* event : {&start_event_, &end_event_})
    STITCH_CUDA_TRY(cudaEventCreate(event), "cudaEventCreate");
  uint64_t flush_bytes = std::max<uint64_t>(2ull * props.l2CacheSize, 32ull << 20);
  STITCH_ASSIGN_OR_RETURN(l2_flush_, DeviceBuffer::allocate(flush_bytes, "L2 flush buffer"));
  return Flow::proceed;
}

json ProgramSession::device_json(int index, const cudaDeviceProp& props) {
  return {{"index", index},
          {"name", props.name},
          {"l2_bytes", props.l2CacheSize},
          {"sm_count", props.multiProcessorCount}};
}

void ProgramSession::install_seccomp() {
  if (!options_.seccomp) return;
  SeccompReport seccomp = install_process_filter(options_.seccomp_mode);
  report_.update([&](json& doc) {
    doc["sandbox"]["seccomp"] = seccomp.installed;
    doc["sandbox"]["seccomp_detail"] = seccomp.detail;
    // The layer list the orchestrator checks (runner_report.h), beside those the worker's
    // isolation reported before CUDA started (main.cc, worker_isolation.h).
    doc["sandbox"]["layers"].push_back(
        sandbox::layer_to_json({"seccomp", seccomp.installed, seccomp.detail}));
  });
}

Status ProgramSession::fill_param(void* data, size_t index, bool generate) {
  const TensorSpec& tensor = spec_.params[index];
  if (generate) {
    FillKind kind = dtype_fill_kind(tensor.dtype);
    STITCH_CUDA_TRY(fill_random(data, tensor.dtype, geometry_of(tensor), kind,
                                kind == FillKind::bernoulli ? 0.5 : 0, 8, next_seed(), stream_),
                    "filling a param");
    return {};
  }
  STITCH_ASSIGN_OR_RETURN(void* source, ipc_.map(spec_.param_refs[index]));
  STITCH_CUDA_TRY(
      cudaMemcpyAsync(data, source, tensor.storage_bytes(), cudaMemcpyDeviceToDevice, stream_),
      fmt::format("copying param {}", tensor.name));
  return {};
}

Result<Flow> ProgramSession::load_candidate(const std::function<void()>& after_dlopen) {
  report_.set_phase("load");
  report_.mark(MarkKind::candidate_loading);  // from here on the supervisor trusts less
  auto library = [&] {
    WatchdogScope scope(watchdog_, {"dlopen of the program", options_.init_timeout_s});
    return load_program(options_.program);
  }();
  candidate_loaded_ = true;  // static initialisers have run, whatever dlopen returned
  if (after_dlopen) after_dlopen();
  if (!library) {
    stop_with(RunStatus::dlopen_failed, library.error().message);
    return Flow::stop;
  }
  program_ = *library;
  int version = 0;
  {
    WatchdogScope scope(watchdog_, {"stitch_abi_version", options_.call_timeout_s});
    version = program_.abi_version();
  }
  if (version != STITCH_ABI_VERSION) {
    stop_with(RunStatus::abi_mismatch,
              fmt::format("stitch_abi_version() is {}, this runner speaks {}", version,
                          STITCH_ABI_VERSION));
    return Flow::stop;
  }
  return Flow::proceed;
}

Result<Flow> ProgramSession::init_candidate(bool synchronize) {
  report_.set_phase("init");
  cudaGetLastError();
  auto start = Clock::now();
  int code = 0;
  cudaError_t sync = cudaSuccess;
  {
    WatchdogScope scope(watchdog_, {"stitch_init", options_.init_timeout_s});
    code = program_.init(param_views_.data(), static_cast<int>(param_views_.size()), &state_);
    if (synchronize && code == STITCH_OK) sync = cudaDeviceSynchronize();
  }
  init_ms_ = ms_since(start);
  report_.update([&](json& doc) { doc["init_ms"] = init_ms_; });
  if (code != STITCH_OK) {
    stop_with(RunStatus::init_failed,
              fmt::format("stitch_init returned {}: {}", code, program_.error_text(nullptr)));
    return Flow::stop;
  }
  initialized_ = true;
  if (synchronize) return check_cuda(sync, "after stitch_init");
  return Flow::proceed;
}

Result<Flow> ProgramSession::check_forward(int code, cudaError_t sync, const std::string& label) {
  if (code != STITCH_OK) {
    stop_with(RunStatus::forward_failed, fmt::format("stitch_forward returned {} ({}): {}", code,
                                                     label, program_.error_text(state_)));
    return Flow::stop;
  }
  return check_cuda(sync, label);
}

Result<Flow> ProgramSession::check_cuda(cudaError_t status, const std::string& label) {
  if (status == cudaSuccess) status = cudaGetLastError();
  if (status != cudaSuccess) {
    stop_with(RunStatus::cuda_error, cuda_error(status, label).message);
    return Flow::stop;
  }
  return Flow::proceed;
}

}  // namespace stitch::runner
