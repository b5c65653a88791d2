// Session: set-up, load, init, the checked call and the correctness phase (see session.h).
#include "runner/session.h"

#include <algorithm>
#include <cstring>

#include "runner/sandbox.h"

namespace stitch::runner {

using nlohmann::json;

int Session::run() {
  run_phases([&]() -> Result<Flow> {
    STITCH_FLOW(setup_device());
    STITCH_TRY(prepare_buffers());
    install_seccomp();
    if (!options_.seccomp) {
      report_.update([&](json& doc) {
        doc["sandbox"]["seccomp"] = false;
        doc["sandbox"]["seccomp_detail"] = "disabled by --no-seccomp";
      });
    }
    STITCH_FLOW(load());
    STITCH_FLOW(initialize());
    STITCH_FLOW(check_correctness());
    STITCH_FLOW(idle_check("device idle check before timing", "before_timing_ms"));
    STITCH_FLOW(time_forward());
    return Flow::proceed;
  });

  // Launch counts that drop to zero on some calls while others launch kernels: calls skipped.
  if (!launches_per_forward_.empty()) {
    auto [low, high] =
        std::minmax_element(launches_per_forward_.begin(), launches_per_forward_.end());
    if (*low == 0 && *high > 0)
      report_.add_finding(
          "skipped_calls",
          fmt::format("some forwards launched no kernel while others launched {}", *high),
          /*fatal=*/false);
  }
  report_.update([&](json& doc) {
    doc["launches"]["available"] = launches_.available();
    doc["launches"]["detail"] = launches_.detail();
    doc["launches"]["runner_stream_id"] = runner_stream_id_;
    doc["launches"]["per_forward"] = launches_per_forward_;
    doc["launches"]["kernel_names"] = launches_.kernel_names();
    doc["threads"]["max_after_forward"] = max_threads_after_forward_;
  });
  return exit_code_for(report_.status());
}

Result<Flow> Session::setup_device() {
  cudaDeviceProp props{};
  STITCH_FLOW(open_device(props));
  STITCH_CUDA_TRY(cudaEventCreate(&stream_end_event_), "cudaEventCreate");
  STITCH_TRY(counters_.init());
  report_.update([&](json& doc) {
    doc["device"] = device_json(spec_.device, props);
    doc["device"]["persisting_l2_max_bytes"] = props.persistingL2CacheMaxSize;
  });

  // Everything the runner does between calls runs once here, so that threads CUDA or CUPTI start
  // lazily exist before the baseline thread count is taken.
  STITCH_TRY(reset_caches(0));
  STITCH_CUDA_TRY(cudaEventRecord(start_event_, stream_), "cudaEventRecord");
  STITCH_CUDA_TRY(cudaEventRecord(end_event_, stream_), "cudaEventRecord");
  STITCH_CUDA_TRY(cudaEventSynchronize(end_event_), "cudaEventSynchronize");
  event_ms(start_event_, end_event_);
  if (options_.launch_counting != LaunchCounting::off && launches_.start()) {
    uint64_t begin = launches_.now();
    Geometry one;
    one.numel = 1;
    STITCH_CUDA_TRY(fill_poison(l2_flush_.data(), STITCH_FLOAT32, one, 0, stream_), "warm-up");
    STITCH_CUDA_TRY(cudaDeviceSynchronize(), "warm-up");
    WindowSummary summary = launches_.collect(begin, launches_.now());
    if (!summary.streams.empty()) runner_stream_id_ = *summary.streams.begin();
    launches_.clear_kernel_names();
  }
  return Flow::proceed;
}

Result<IoSet> Session::allocate_io_set() {
  IoSet io;
  auto allocate = [&](const std::vector<TensorSpec>& tensors, std::vector<GuardedBuffer>& buffers,
                      std::vector<stitch_tensor>& views) -> Status {
    for (const auto& tensor : tensors) {
      STITCH_ASSIGN_OR_RETURN(GuardedBuffer buffer,
                              GuardedBuffer::allocate(tensor.storage_bytes(), options_.guard_bytes,
                                                      next_seed(), stream_));
      views.push_back(tensor.to_abi(buffer.data()));
      buffers.push_back(std::move(buffer));
    }
    return {};
  };
  STITCH_TRY(allocate(spec_.inputs, io.inputs, io.input_views));
  STITCH_TRY(allocate(spec_.outputs, io.outputs, io.output_views));
  return io;
}

Status Session::fill_input(void* data, const TensorSpec& tensor, size_t input_index) {
  if (tensor.distribution.kind == DistributionKind::fixed) {
    STITCH_CUDA_TRY(cudaMemcpyAsync(data, fixed_sources_[input_index].data(),
                                    tensor.storage_bytes(), cudaMemcpyDeviceToDevice, stream_),
                    "copying a fixed input");
    return {};
  }
  STITCH_CUDA_TRY(
      fill_random(data, tensor.dtype, geometry_of(tensor), fill_kind(tensor.distribution.kind),
                  tensor.distribution.a, tensor.distribution.b, next_seed(), stream_),
      "filling an input");
  return {};
}

Status Session::load_params() {
  for (size_t i = 0; i < spec_.params.size(); ++i) {
    const TensorSpec& tensor = spec_.params[i];
    STITCH_ASSIGN_OR_RETURN(GuardedBuffer buffer,
                            GuardedBuffer::allocate(tensor.storage_bytes(), options_.guard_bytes,
                                                    next_seed(), stream_));
    STITCH_TRY(fill_param(buffer.data(), i, spec_.self_test));
    param_views_.push_back(tensor.to_abi(buffer.data()));
    params_.push_back(std::move(buffer));
  }
  STITCH_CUDA_TRY(cudaStreamSynchronize(stream_), "copying params");
  ipc_.close_all();
  return {};
}

Status Session::prepare_buffers() {
  STITCH_TRY(load_params());
  STITCH_ASSIGN_OR_RETURN(check_io_, allocate_io_set());
  fixed_sources_.resize(spec_.inputs.size());
  for (size_t j = 0; j < spec_.inputs.size(); ++j) {
    const TensorSpec& tensor = spec_.inputs[j];
    if (tensor.distribution.kind != DistributionKind::fixed) continue;
    STITCH_ASSIGN_OR_RETURN(fixed_sources_[j],
                            DeviceBuffer::allocate(tensor.storage_bytes(), "fixed input"));
    if (spec_.self_test)  // no recorded value without a judge: one random draw, kept
      STITCH_CUDA_TRY(fill_random(fixed_sources_[j].data(), tensor.dtype, geometry_of(tensor),
                                  FillKind::normal, 0, 0, next_seed(), stream_),
                      "filling a fixed input");
  }
  if (spec_.self_test) {
    for (size_t s = 0; s < spec_.check_sets.size(); ++s) {
      check_sources_.emplace_back();
      for (size_t j = 0; j < spec_.inputs.size(); ++j) {
        STITCH_ASSIGN_OR_RETURN(
            DeviceBuffer source,
            DeviceBuffer::allocate(spec_.inputs[j].storage_bytes(), "self-test check input"));
        STITCH_TRY(fill_input(source.data(), spec_.inputs[j], j));
        check_sources_.back().push_back(std::move(source));
      }
    }
  }
  for (const auto& tensor : spec_.outputs) {
    STITCH_ASSIGN_OR_RETURN(DeviceBuffer copy,
                            DeviceBuffer::allocate(tensor.storage_bytes(), "determinism copy"));
    determinism_copy_.push_back(std::move(copy));
    STITCH_ASSIGN_OR_RETURN(DeviceBuffer snapshot,
                            DeviceBuffer::allocate(tensor.storage_bytes(), "output snapshot"));
    snapshots_.push_back(std::move(snapshot));
  }
  for (int s = 0; s < std::max(options_.timing_sets, 1); ++s) {
    STITCH_ASSIGN_OR_RETURN(IoSet io, allocate_io_set());
    timing_sets_.push_back(std::move(io));
  }
  STITCH_ASSIGN_OR_RETURN(recheck_io_, allocate_io_set());
  STITCH_CUDA_TRY(cudaDeviceSynchronize(), "preparing buffers");
  return {};
}

Result<Flow> Session::load() {
  threads_before_load_ = list_threads();
  return load_candidate([&] {
    std::vector<int> after_load = list_threads();
    report_.update([&](json& doc) {
      doc["threads"]["before_dlopen"] = threads_before_load_.size();
      doc["threads"]["after_dlopen"] = after_load.size();
    });
    inspect_processes("dlopen");
  });
}

Result<Flow> Session::initialize() {
  uint64_t begin = launches_.now();
  STITCH_FLOW(init_candidate(/*synchronize=*/false));
  // Work init leaves running must end: a kernel that does not is waiting for work (row 22).
  STITCH_FLOW(idle_check("device idle check after stitch_init", "after_init_ms"));
  STITCH_FLOW(check_cuda(cudaSuccess, "after stitch_init"));
  if (launches_.enabled()) {
    WindowSummary summary = launches_.collect(begin, launches_.now());
    report_.update([&](json& doc) { doc["init_launches"] = summary.launches; });
  }
  std::vector<int> after_init = list_threads();
  std::vector<int> started = threads_started(after_init, threads_before_load_);
  if (!started.empty()) {
    report_.add_finding("init_side_effect",
                        fmt::format("{} thread(s) started at load or in stitch_init outlive it: {}",
                                    started.size(), describe_threads(started)));
    reported_threads_.insert(started.begin(), started.end());
  }
  report_.update([&](json& doc) { doc["threads"]["after_init"] = after_init.size(); });
  inspect_processes("stitch_init");
  return Flow::proceed;
}

Result<Flow> Session::call_forward(IoSet& io, const CallOptions& call, CallRecord& record) {
  // Whatever the runner's own calls left is cleared, so an error after the call is the program's.
  STITCH_CUDA_TRY(cudaDeviceSynchronize(), "before " + call.label);
  cudaGetLastError();
  std::vector<int> threads_before = list_threads();
  bool counting = launches_.enabled();
  uint64_t window_begin = counting ? launches_.now() : 0;
  int code = 0;
  cudaError_t sync_status = cudaSuccess;
  Clock::time_point wall_start, wall_end;
  // The supervisor's interval must contain the whole call: begin before the start event, end
  // after the synchronize of the end event (channel.h).
  if (call.timed_iteration >= 0) report_.mark(MarkKind::call_begin, call.timed_iteration);
  {
    WatchdogScope scope(watchdog_,
                        {"stitch_forward (" + call.label + ")", options_.call_timeout_s});
    cudaEventRecord(start_event_, stream_);
    wall_start = Clock::now();
    code =
        program_.forward(state_, io.input_views.data(), static_cast<int>(io.input_views.size()),
                         io.output_views.data(), static_cast<int>(io.output_views.size()), stream_);
    cudaEventRecord(stream_end_event_, stream_);
    // Starts when the caller's stream has finished the forward: program kernels still running
    // after that were not joined into it (row 2).
    if (counting) launch_stream_marker(stream_);
    if (call.snapshot)  // ordered after the caller's stream only: unjoined work shows as poison
      for (size_t k = 0; k < io.outputs.size(); ++k)
        cudaMemcpyAsync(snapshots_[k].data(), io.outputs[k].data(), io.outputs[k].payload_bytes(),
                        cudaMemcpyDeviceToDevice, stream_);
    sync_status = cudaDeviceSynchronize();
    wall_end = Clock::now();
    if (sync_status == cudaSuccess) {
      cudaEventRecord(end_event_, stream_);
      sync_status = cudaEventSynchronize(end_event_);
    }
  }
  if (call.timed_iteration >= 0) report_.mark(MarkKind::call_end, call.timed_iteration);
  STITCH_FLOW(check_forward(code, sync_status, call.label));
  record.wall_ms = std::chrono::duration<double, std::milli>(wall_end - wall_start).count();
  record.gpu_ms = event_ms(start_event_, stream_end_event_);
  record.synced_ms = event_ms(start_event_, end_event_);
  inspect_threads(threads_before, call.label);
  // The runner keeps the persisting-L2 limit at 0 (reset_caches); a program that raises it wants
  // lines to survive the flush between calls (row 14). Reset before every call, so: a warning.
  size_t persisting_limit = 0;
  if (cudaDeviceGetLimit(&persisting_limit, cudaLimitPersistingL2CacheSize) != cudaSuccess)
    cudaGetLastError();
  if (persisting_limit > 0 && !report_.has_finding("l2_persistence"))
    report_.add_finding("l2_persistence",
                        fmt::format("{}: the program set a persisting-L2 limit of {} bytes (the "
                                    "runner resets it and the persisting lines before every call)",
                                    call.label, persisting_limit),
                        /*fatal=*/false);
  if (counting) {
    WindowSummary summary = launches_.collect(window_begin, launches_.now());
    record.launches = summary.launches;
    launches_per_forward_.push_back(summary.launches);
    report_unjoined_kernels(summary, call.label);
    size_t other_streams = summary.streams.size() - summary.streams.count(runner_stream_id_);
    if (other_streams > 0 && !report_.has_finding("side_stream"))
      report_.add_finding("side_stream",
                          fmt::format("{}: kernels ran on {} stream(s) besides the caller's "
                                      "(outputs were complete when the caller's stream was)",
                                      call.label, other_streams),
                          /*fatal=*/false);
  }
  inspect_processes(call.label);
  return Flow::proceed;
}

void Session::report_unjoined_kernels(const WindowSummary& summary, const std::string& label) {
  if (summary.marker_start_ns == 0 || unjoined_reported_) return;
  // 1 us of slack for timestamp granularity: ordered work ends before the marker starts.
  constexpr uint64_t kSlackNs = 1000;
  for (const KernelRecord& kernel : summary.kernels) {
    if (kernel.stream_id == runner_stream_id_ ||
        kernel.end_ns <= summary.marker_start_ns + kSlackNs)
      continue;
    report_.add_finding(
        "side_stream",
        fmt::format("{}: kernel {} on stream {} ran {:.1f} us after the caller's stream had "
                    "finished the forward: work not joined into the caller's stream",
                    label, kernel.name.substr(0, 120), kernel.stream_id,
                    (kernel.end_ns - summary.marker_start_ns) / 1e3));
    unjoined_reported_ = true;
    return;
  }
}

Result<Flow> Session::check_correctness() {
  report_.set_phase("correctness");
  launches_.set_enabled(options_.launch_counting != LaunchCounting::off);
  for (size_t s = 0; s < spec_.check_sets.size(); ++s)
    for (int run = 0; run < (s == 0 ? 2 : 1); ++run)
      STITCH_FLOW(run_check_set(s, run));
  return Flow::proceed;
}

Result<Flow> Session::run_check_set(size_t set_index, int run) {
  std::string label = fmt::format("check set {}{}", set_index, run ? " (repeat)" : "");
  STITCH_TRY(stage_check_inputs(set_index, run));
  STITCH_TRY(poison_outputs(check_io_, run));
  STITCH_CUDA_TRY(cudaStreamSynchronize(stream_), "preparing " + label);
  ipc_.close_all();  // the judge's memory is not mapped while the program runs

  CallRecord record;
  STITCH_FLOW(call_forward(check_io_, {label, /*snapshot=*/true}, record));

  STITCH_ASSIGN_OR_RETURN(uint64_t damage, canary_damage(check_io_));
  if (damage > 0) {
    report_.add_finding(
        "guard_band",
        fmt::format("{}: {} canary bytes around the program's buffers overwritten", label, damage));
    STITCH_TRY(restore_canaries(check_io_));
  }
  STITCH_ASSIGN_OR_RETURN(bool inputs_unchanged, check_inputs_unchanged(set_index, label));
  STITCH_ASSIGN_OR_RETURN(std::vector<uint64_t> poison, poison_remaining(check_io_, run));
  report_poison(poison, label);
  STITCH_ASSIGN_OR_RETURN(std::vector<uint64_t> unjoined, unjoined_output_elements(label));
  if (set_index == 0) STITCH_TRY(check_determinism(run));
  bool copied = false;
  if (!spec_.self_test && run == 0) {
    STITCH_TRY(copy_to_check_slot(spec_.check_sets[set_index]));
    copied = true;
  }
  ipc_.close_all();
  report_.update([&](json& doc) {
    doc["check_sets"].push_back({{"index", set_index},
                                 {"run", run},
                                 {"canaries_intact", damage == 0},
                                 {"inputs_unchanged", inputs_unchanged},
                                 {"poison_remaining", poison},
                                 {"unjoined_elements", unjoined},
                                 {"launches", record.launches},
                                 {"gpu_ms", record.gpu_ms},
                                 {"synced_ms", record.synced_ms},
                                 {"wall_ms", record.wall_ms},
                                 {"copied_to_slot", copied}});
  });
  return Flow::proceed;
}

Result<void*> Session::check_input_source(size_t set_index, size_t input) {
  if (spec_.self_test) return check_sources_[set_index][input].data();
  return ipc_.map(spec_.check_sets[set_index].inputs[input]);
}

Status Session::stage_check_inputs(size_t set_index, int run) {
  for (size_t j = 0; j < spec_.inputs.size(); ++j) {
    STITCH_ASSIGN_OR_RETURN(void* source, check_input_source(set_index, j));
    uint64_t bytes = spec_.inputs[j].storage_bytes();
    STITCH_CUDA_TRY(cudaMemcpyAsync(check_io_.inputs[j].data(), source, bytes,
                                    cudaMemcpyDeviceToDevice, stream_),
                    "copying check inputs");
    if (!spec_.self_test && set_index == 0 && run == 0 && fixed_sources_[j].data())
      STITCH_CUDA_TRY(cudaMemcpyAsync(fixed_sources_[j].data(), source, bytes,
                                      cudaMemcpyDeviceToDevice, stream_),
                      "keeping a fixed input");
  }
  return {};
}

Result<bool> Session::check_inputs_unchanged(size_t set_index, const std::string& label) {
  bool inputs_unchanged = true;
  for (size_t j = 0; j < spec_.inputs.size(); ++j) {
    STITCH_ASSIGN_OR_RETURN(void* source, check_input_source(set_index, j));
    STITCH_ASSIGN_OR_RETURN(uint64_t changed, byte_mismatches(check_io_.inputs[j].data(), source,
                                                              spec_.inputs[j].storage_bytes()));
    if (changed == 0) continue;
    inputs_unchanged = false;
    report_.add_finding("mutates_inputs", fmt::format("{}: input {} ({}): {} bytes changed by the "
                                                      "call",
                                                      label, j, spec_.inputs[j].name, changed));
  }
  return inputs_unchanged;
}

Result<std::vector<uint64_t>> Session::unjoined_output_elements(const std::string& label) {
  std::vector<uint64_t> unjoined;
  for (size_t k = 0; k < spec_.outputs.size(); ++k) {
    STITCH_ASSIGN_OR_RETURN(
        CompareCounts counts,
        compare(snapshots_[k].data(), check_io_.outputs[k].data(), spec_.outputs[k], 0, 0));
    unjoined.push_back(counts.bit_mismatches);
    if (counts.bit_mismatches > 0)
      report_.add_finding("side_stream",
                          fmt::format("{}: output {}: {} elements were written after the caller's "
                                      "stream had finished (work not joined into the stream)",
                                      label, k, counts.bit_mismatches));
  }
  return unjoined;
}

Status Session::check_determinism(int run) {
  for (size_t k = 0; k < spec_.outputs.size(); ++k) {
    if (!spec_.outputs[k].state.empty()) continue;  // the buffers moved on by one call
    if (run == 0) {
      STITCH_CUDA_TRY(
          cudaMemcpyAsync(determinism_copy_[k].data(), check_io_.outputs[k].data(),
                          spec_.outputs[k].storage_bytes(), cudaMemcpyDeviceToDevice, stream_),
          "keeping outputs for the determinism check");
      continue;
    }
    STITCH_ASSIGN_OR_RETURN(
        CompareCounts counts,
        compare(check_io_.outputs[k].data(), determinism_copy_[k].data(), spec_.outputs[k], 0, 0));
    double max_diff = 0;
    static_assert(sizeof(double) == sizeof(counts.max_abs_diff_bits));
    std::memcpy(&max_diff, &counts.max_abs_diff_bits, sizeof max_diff);
    report_.update([&](json& doc) {
      json& determinism = doc["determinism"];
      determinism["checked"] = true;
      if (!determinism.contains("identical")) determinism["identical"] = true;
      if (counts.bit_mismatches > 0) determinism["identical"] = false;
      determinism["outputs"].push_back(
          {{"bit_mismatches", counts.bit_mismatches}, {"max_abs_diff", max_diff}});
    });
  }
  return {};
}

Status Session::copy_to_check_slot(const SlotSet& slots) {
  STITCH_TRY(copy_to_slots(slots.outputs, check_io_.outputs, spec_.outputs,
                           "copying outputs to the check slot"));
  STITCH_CUDA_TRY(cudaStreamSynchronize(stream_), "copying outputs to the check slot");
  ipc_.close_all();
  return {};
}

Status Session::copy_to_slots(const std::vector<IpcRef>& slots,
                              const std::vector<GuardedBuffer>& buffers,
                              const std::vector<TensorSpec>& tensors, const char* what) {
  for (size_t k = 0; k < tensors.size(); ++k) {
    STITCH_ASSIGN_OR_RETURN(void* slot, ipc_.map(slots[k]));
    STITCH_CUDA_TRY(cudaMemcpyAsync(slot, buffers[k].data(), tensors[k].storage_bytes(),
                                    cudaMemcpyDeviceToDevice, stream_),
                    what);
  }
  return {};
}

}  // namespace stitch::runner
