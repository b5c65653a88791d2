// ProfileSession: device set-up, buffers, load, warm-up and the two traced forwards; see
// profile_session.h. The sandbox (main.cc) is already in place when this runs.
#include "runner/profile_session.h"

#include <sys/random.h>

#include <algorithm>
#include <chrono>

#include "runner/profile_timeline.h"
#include "runner/sandbox.h"
#include "util/fs.h"

namespace stitch::runner {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

FillKind fill_kind_of(const TensorSpec& tensor) {
  const DTypeInfo& info = dtype_info(tensor.dtype);
  if (!info.floating) return tensor.dtype == STITCH_BOOL ? FillKind::bernoulli : FillKind::randint;
  switch (tensor.distribution.kind) {
    case DistributionKind::uniform:
      return FillKind::uniform;
    case DistributionKind::randint:
      return FillKind::randint;
    case DistributionKind::bernoulli:
      return FillKind::bernoulli;
    default:
      return FillKind::normal;  // normal, and `fixed` without a judge's value: one draw
  }
}

}  // namespace

ProfileSession::ProfileSession(const RunnerOptions& options, RunSpec spec, ReportBuilder& report,
                               Watchdog& watchdog)
    : options_(options), spec_(std::move(spec)), report_(report), watchdog_(watchdog) {
  if (options_.seed) {
    rng_state_ = *options_.seed;
  } else if (getrandom(&rng_state_, sizeof rng_state_, 0) != sizeof rng_state_) {
    rng_state_ = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  }
  profile_ = {{"format", "stitchcuda.profile_timeline"},
              {"version", 1},
              {"status", "ok"},
              {"message", ""},
              {"program", options_.program.string()},
              {"notes", json::array()}};
}

uint64_t ProfileSession::next_seed() {  // splitmix64, as in Session
  uint64_t z = (rng_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void ProfileSession::stop_with(RunStatus status, std::string message) {
  if (report_.status() == RunStatus::ok) report_.set_status(status, std::move(message));
}

int ProfileSession::run() {
  report_.update([&](json& doc) { doc["mode"] = "profile"; });
  auto phases = [&]() -> Result<Flow> {
    STITCH_FLOW(setup_device());
    STITCH_TRY(prepare_buffers());
    if (options_.seccomp) {
      SeccompReport seccomp = install_process_filter();
      report_.update([&](json& doc) {
        doc["sandbox"]["seccomp"] = seccomp.installed;
        doc["sandbox"]["seccomp_detail"] = seccomp.detail;
      });
    }
    STITCH_FLOW(load_and_init());
    STITCH_FLOW(profile_forwards());
    return Flow::proceed;
  };
  Result<Flow> result = phases();
  if (!result)
    stop_with(candidate_loaded_ ? RunStatus::cuda_error : RunStatus::setup_failed,
              result.error().message);

  report_.update([&](json& doc) {
    profile_["status"] = doc["status"];
    profile_["message"] = doc["message"];
    doc["profile"] = options_.profile.string();
  });
  std::string text = profile_.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
  Status written = write_file_atomic(options_.profile, text);
  if (!written)
    stop_with(RunStatus::setup_failed, "writing the profile: " + written.error().message);
  return exit_code_for(report_.status());
}

void ProfileSession::finish() {
  if (initialized_ && state_) {
    WatchdogScope scope(watchdog_, {"stitch_destroy", options_.call_timeout_s, "", "", false});
    program_.destroy(state_);
    cudaDeviceSynchronize();
  }
  kill_processes(list_child_processes());
}

Result<Flow> ProfileSession::setup_device() {
  report_.set_phase("setup");
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
  cudaDeviceProp props{};
  STITCH_CUDA_TRY(cudaGetDeviceProperties(&props, spec_.device), "cudaGetDeviceProperties");
  STITCH_CUDA_TRY(cudaStreamCreate(&stream_), "cudaStreamCreate");
  STITCH_CUDA_TRY(cudaEventCreate(&start_event_), "cudaEventCreate");
  STITCH_CUDA_TRY(cudaEventCreate(&end_event_), "cudaEventCreate");
  uint64_t flush_bytes = std::max<uint64_t>(2ull * props.l2CacheSize, 32ull << 20);
  STITCH_ASSIGN_OR_RETURN(l2_flush_, DeviceBuffer::allocate(flush_bytes, "L2 flush buffer"));
  json device = {{"index", spec_.device},
                 {"name", props.name},
                 {"sm_count", props.multiProcessorCount},
                 {"l2_bytes", props.l2CacheSize}};
  report_.update([&](json& doc) { doc["device"] = device; });
  profile_["device"] = device;
  tracer_.start();
  profile_["cupti"] = {{"available", tracer_.available()}, {"detail", tracer_.detail()}};
  if (!tracer_.available())
    profile_["notes"].push_back("CUPTI unavailable (" + tracer_.detail() +
                                "): no timeline; forward times are CUDA events and wall clock");
  return Flow::proceed;
}

Status ProfileSession::prepare_buffers() {
  report_.set_phase("buffers");
  for (size_t i = 0; i < spec_.params.size(); ++i) {
    const TensorSpec& tensor = spec_.params[i];
    STITCH_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                            DeviceBuffer::allocate(tensor.storage_bytes(), "param"));
    if (spec_.param_refs.empty()) {  // as Session does in --self-test
      const DTypeInfo& info = dtype_info(tensor.dtype);
      FillKind kind = info.floating                 ? FillKind::normal
                      : tensor.dtype == STITCH_BOOL ? FillKind::bernoulli
                                                    : FillKind::randint;
      STITCH_CUDA_TRY(fill_random(buffer.data(), tensor.dtype, geometry_of(tensor), kind,
                                  kind == FillKind::bernoulli ? 0.5 : 0, 8, next_seed(), stream_),
                      "filling a param");
    } else {
      STITCH_ASSIGN_OR_RETURN(void* source, ipc_.map(spec_.param_refs[i]));
      STITCH_CUDA_TRY(cudaMemcpyAsync(buffer.data(), source, tensor.storage_bytes(),
                                      cudaMemcpyDeviceToDevice, stream_),
                      fmt::format("copying param {}", tensor.name));
    }
    param_views_.push_back(tensor.to_abi(buffer.data()));
    params_.push_back(std::move(buffer));
  }
  // The judge's first check set when there is one (real inputs), else the declared distributions.
  bool judge_inputs = !spec_.self_test && !spec_.check_sets.empty() &&
                      spec_.check_sets[0].inputs.size() == spec_.inputs.size();
  for (size_t j = 0; j < spec_.inputs.size(); ++j) {
    const TensorSpec& tensor = spec_.inputs[j];
    STITCH_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                            DeviceBuffer::allocate(tensor.storage_bytes(), "input"));
    if (judge_inputs) {
      STITCH_ASSIGN_OR_RETURN(void* source, ipc_.map(spec_.check_sets[0].inputs[j]));
      STITCH_CUDA_TRY(cudaMemcpyAsync(buffer.data(), source, tensor.storage_bytes(),
                                      cudaMemcpyDeviceToDevice, stream_),
                      "copying an input");
    } else {
      FillKind kind = fill_kind_of(tensor);
      double a = tensor.distribution.a, b = tensor.distribution.b;
      if (kind == FillKind::randint && b <= a) a = 0, b = 8;  // an integer input declared randn
      if (kind == FillKind::bernoulli && tensor.distribution.kind != DistributionKind::bernoulli)
        a = 0.5;
      STITCH_CUDA_TRY(fill_random(buffer.data(), tensor.dtype, geometry_of(tensor), kind, a, b,
                                  next_seed(), stream_),
                      "filling an input");
    }
    input_views_.push_back(tensor.to_abi(buffer.data()));
    inputs_.push_back(std::move(buffer));
  }
  for (const TensorSpec& tensor : spec_.outputs) {
    STITCH_ASSIGN_OR_RETURN(DeviceBuffer buffer,
                            DeviceBuffer::allocate(tensor.storage_bytes(), "output"));
    output_views_.push_back(tensor.to_abi(buffer.data()));
    outputs_.push_back(std::move(buffer));
  }
  STITCH_CUDA_TRY(cudaDeviceSynchronize(), "preparing buffers");
  ipc_.close_all();  // the judge's memory is not mapped while the program runs
  return {};
}

Result<Flow> ProfileSession::load_and_init() {
  report_.set_phase("load");
  auto library = [&] {
    WatchdogScope scope(watchdog_, {"dlopen of the program", options_.init_timeout_s});
    return load_program(options_.program);
  }();
  candidate_loaded_ = true;
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
  report_.set_phase("init");
  cudaGetLastError();
  auto start = Clock::now();
  int code = 0;
  cudaError_t sync = cudaSuccess;
  {
    WatchdogScope scope(watchdog_, {"stitch_init", options_.init_timeout_s});
    code = program_.init(param_views_.data(), static_cast<int>(param_views_.size()), &state_);
    if (code == STITCH_OK) sync = cudaDeviceSynchronize();
  }
  double init_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  report_.update([&](json& doc) { doc["init_ms"] = init_ms; });
  profile_["init_ms"] = init_ms;
  if (code != STITCH_OK) {
    stop_with(RunStatus::init_failed,
              fmt::format("stitch_init returned {}: {}", code, program_.error_text(nullptr)));
    return Flow::stop;
  }
  initialized_ = true;
  if (sync == cudaSuccess) sync = cudaGetLastError();
  if (sync != cudaSuccess) {
    stop_with(RunStatus::cuda_error, cuda_error(sync, "after stitch_init").message);
    return Flow::stop;
  }
  return Flow::proceed;
}

Status ProfileSession::flush_l2() {
  // The same cold-cache start the timing phase gives every timed call.
  if (cudaCtxResetPersistingL2Cache() != cudaSuccess) cudaGetLastError();
  STITCH_CUDA_TRY(cudaMemsetAsync(l2_flush_.data(), static_cast<int>(next_seed() & 0xff),
                                  l2_flush_.bytes(), stream_),
                  "flushing L2");
  STITCH_CUDA_TRY(cudaDeviceSynchronize(), "flushing L2");
  return {};
}

Result<Flow> ProfileSession::forward(const std::string& label, ForwardTimes& times) {
  STITCH_TRY(flush_l2());
  cudaGetLastError();
  int code = 0;
  cudaError_t sync_status = cudaSuccess;
  Clock::time_point wall_start, wall_end;
  {
    WatchdogScope scope(watchdog_, {"stitch_forward (" + label + ")", options_.call_timeout_s});
    cudaEventRecord(start_event_, stream_);
    times.begin_ns = tracer_.now();
    wall_start = Clock::now();
    code = program_.forward(state_, input_views_.data(), static_cast<int>(input_views_.size()),
                            output_views_.data(), static_cast<int>(output_views_.size()), stream_);
    times.returned_ns = tracer_.now();
    cudaEventRecord(end_event_, stream_);
    sync_status = cudaDeviceSynchronize();
    wall_end = Clock::now();
    times.end_ns = tracer_.now();
  }
  if (code != STITCH_OK) {
    stop_with(RunStatus::forward_failed, fmt::format("stitch_forward returned {} ({}): {}", code,
                                                     label, program_.error_text(state_)));
    return Flow::stop;
  }
  if (sync_status == cudaSuccess) sync_status = cudaGetLastError();
  if (sync_status != cudaSuccess) {
    stop_with(RunStatus::cuda_error, cuda_error(sync_status, label).message);
    return Flow::stop;
  }
  times.wall_ms = std::chrono::duration<double, std::milli>(wall_end - wall_start).count();
  times.event_ms = event_ms(start_event_, end_event_);
  return Flow::proceed;
}

Result<Flow> ProfileSession::profile_forwards() {
  report_.set_phase("profile");
  const int warmup = std::max(options_.warmup, 1);  // the first call pays for lazy loading
  json untraced_event = json::array(), untraced_wall = json::array();
  for (int i = 0; i < warmup; ++i) {
    ForwardTimes times;
    STITCH_FLOW(forward(fmt::format("warm-up {}", i), times));
    untraced_event.push_back(times.event_ms);
    untraced_wall.push_back(times.wall_ms);
  }
  profile_["warmup"] = warmup;
  profile_["untraced"] = {{"event_ms", untraced_event}, {"wall_ms", untraced_wall}};

  bool traced = tracer_.available() && tracer_.enable({/*gpu=*/true, /*api=*/false});
  if (tracer_.available() && !traced)
    profile_["notes"].push_back("CUPTI refused activity tracing: " + tracer_.detail());
  ForwardTimes times;
  if (traced) {
    // The first forward after tracing is switched on pays CUPTI's set-up (seen as a long idle
    // stretch that would read as launch overhead): run it untimed, drop its records.
    STITCH_FLOW(forward("trace warm-up", times));
    tracer_.take();
  }
  STITCH_FLOW(forward("traced forward", times));
  TraceRecords records = traced ? tracer_.take() : TraceRecords{};
  tracer_.disable();
  int64_t wall_ns = static_cast<int64_t>(times.wall_ms * 1e6);
  profile_["forward"] = {
      {"traced", traced},
      {"event_ms", times.event_ms},
      {"wall_ms", times.wall_ms},
      {"wall_ns", traced ? static_cast<int64_t>(times.end_ns - times.begin_ns) : wall_ns},
      // Host time inside stitch_forward: close to wall_ns means the host, not the GPU, sets the
      // pace.
      {"host_ns",
       traced ? json(static_cast<int64_t>(times.returned_ns - times.begin_ns)) : json(nullptr)}};
  if (traced) {
    Timeline timeline = build_timeline(records, times.begin_ns, times.end_ns);
    json part = timeline_to_json(timeline, records);
    profile_["activities"] = std::move(part["activities"]);
    profile_["totals"] = std::move(part["totals"]);
    if (timeline.totals.kernels == 0)
      profile_["notes"].push_back("the traced forward launched no kernel");
  } else {
    profile_["activities"] = json::array();
    profile_["totals"] = {{"forward_ns", wall_ns}, {"gpu_busy_ns", nullptr}};
  }

  // A second forward for launch overhead: API tracing slows every call, so it is kept out of the
  // timeline above.
  json api = {{"traced", false}, {"detail", "no CUPTI tracing"}};
  if (traced && tracer_.enable({/*gpu=*/true, /*api=*/true})) {
    ForwardTimes api_times;
    STITCH_FLOW(forward("API trace warm-up", api_times));
    tracer_.take();
    STITCH_FLOW(forward("API-traced forward", api_times));
    TraceRecords api_records = tracer_.take();
    tracer_.disable();
    api = api_to_json(
        summarize_api(api_records, api_times.begin_ns, api_times.returned_ns, api_times.end_ns));
    api["traced"] = true;
    api["detail"] = "runtime and driver API records of a second forward";
    api["wall_ns"] = static_cast<int64_t>(api_times.end_ns - api_times.begin_ns);
  } else if (traced) {
    api["detail"] = "CUPTI refused API tracing: " + tracer_.detail();
  }
  profile_["api"] = std::move(api);
  profile_["cupti"]["dropped_buffers"] = tracer_.dropped_buffers();
  if (tracer_.dropped_buffers() > 0)
    profile_["notes"].push_back("CUPTI dropped records (a buffer could not be allocated)");
  return Flow::proceed;
}

}  // namespace stitch::runner
