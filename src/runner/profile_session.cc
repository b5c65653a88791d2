// ProfileSession: device set-up, buffers, load, warm-up and the two traced forwards; see
// profile_session.h. The sandbox (main.cc) is already in place when this runs.
#include "runner/profile_session.h"

#include <algorithm>

#include "runner/profile_timeline.h"
#include "util/fs.h"

namespace stitch::runner {
namespace {

using nlohmann::json;

// Inputs without a judge's values: integers and bools by their dtype, floats by their declared
// distribution.
FillKind fill_kind_of(const TensorSpec& tensor) {
  if (!dtype_info(tensor.dtype).floating) return dtype_fill_kind(tensor.dtype);
  return fill_kind(tensor.distribution.kind);
}

}  // namespace

ProfileSession::ProfileSession(const RunnerOptions& options, RunSpec spec, ReportBuilder& report,
                               Watchdog& watchdog)
    : ProgramSession(options, std::move(spec), report, watchdog) {
  profile_ = {{"format", "stitchcuda.profile_timeline"},
              {"version", 1},
              {"status", "ok"},
              {"message", ""},
              {"program", options_.program.string()},
              {"notes", json::array()}};
}

int ProfileSession::run() {
  report_.update([&](json& doc) { doc["mode"] = "profile"; });
  run_phases([&]() -> Result<Flow> {
    STITCH_FLOW(setup_device());
    STITCH_TRY(prepare_buffers());
    install_seccomp();
    STITCH_FLOW(load_and_init());
    STITCH_FLOW(profile_forwards());
    return Flow::proceed;
  });

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

Result<Flow> ProfileSession::setup_device() {
  report_.set_phase("setup");
  cudaDeviceProp props{};
  STITCH_FLOW(open_device(props));
  json device = device_json(spec_.device, props);
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
    STITCH_TRY(fill_param(buffer.data(), i, /*generate=*/spec_.param_refs.empty()));
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
  STITCH_FLOW(load_candidate());
  Result<Flow> initialized = init_candidate(/*synchronize=*/true);
  profile_["init_ms"] = init_ms_;
  return initialized;
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
  STITCH_FLOW(check_forward(code, sync_status, label));
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
