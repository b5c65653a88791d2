// Session: the checks around each call — canaries, poison, comparisons, checksums, threads,
// processes, device idleness — and the cache resets before a timed call (see session.h).
#include <chrono>
#include <cstring>

#include "runner/sandbox.h"
#include "runner/session.h"

namespace stitch::runner {
namespace {

using nlohmann::json;

// Poison is a finding wherever it cannot be a legitimate value: NaN payloads for floats, a byte
// other than 0/1 for bool, 0xA5A5A5A5-like words for wide integers. One-byte and two-byte integers
// can equal the pattern legitimately, so for them only a wholly unwritten output counts.
bool poison_is_finding(stitch_dtype dtype, uint64_t remaining, int64_t numel) {
  if (remaining == 0) return false;
  const DTypeInfo& info = dtype_info(dtype);
  if (info.floating || dtype == STITCH_BOOL || info.size >= 4) return true;
  return static_cast<int64_t>(remaining) == numel;
}

}  // namespace

Result<uint64_t> Session::canary_damage(const IoSet& io) {
  STITCH_CUDA_TRY(counters_.zero(stream_), "zeroing counters");
  for (const auto* group : {&io.inputs, &io.outputs})
    for (const auto& buffer : *group)
      STITCH_CUDA_TRY(buffer.count_damage(counters_.slot(0), stream_), "checking canaries");
  STITCH_ASSIGN_OR_RETURN(auto values, counters_.read(stream_));
  return static_cast<uint64_t>(values[0]);
}

Status Session::restore_canaries(const IoSet& io) {
  for (const auto* group : {&io.inputs, &io.outputs})
    for (const auto& buffer : *group)
      STITCH_CUDA_TRY(buffer.restore_canaries(stream_), "restoring canaries");
  return {};
}

Status Session::poison_outputs(const IoSet& io, int pattern) {
  for (size_t k = 0; k < io.outputs.size(); ++k)
    STITCH_CUDA_TRY(fill_poison(io.outputs[k].data(), spec_.outputs[k].dtype,
                                geometry_of(spec_.outputs[k]), pattern, stream_),
                    "poisoning outputs");
  return {};
}

Result<std::vector<uint64_t>> Session::poison_remaining(const IoSet& io, int pattern) {
  std::vector<uint64_t> remaining;
  for (size_t k = 0; k < io.outputs.size(); ++k) {
    STITCH_CUDA_TRY(counters_.zero(stream_), "zeroing counters");
    STITCH_CUDA_TRY(
        count_poison(io.outputs[k].data(), spec_.outputs[k].dtype, geometry_of(spec_.outputs[k]),
                     pattern, counters_.slot(0), stream_),
        "counting poison");
    STITCH_ASSIGN_OR_RETURN(auto values, counters_.read(stream_));
    remaining.push_back(values[0]);
  }
  return remaining;
}

void Session::report_poison(const std::vector<uint64_t>& remaining, const std::string& label) {
  for (size_t k = 0; k < remaining.size(); ++k) {
    const TensorSpec& tensor = spec_.outputs[k];
    if (!poison_is_finding(tensor.dtype, remaining[k], tensor.numel())) continue;
    report_.add_finding("stale_output",
                        fmt::format("{}: output {}: {} of {} elements still hold the poison "
                                    "written before the call (never written by the program)",
                                    label, k, remaining[k], tensor.numel()));
  }
}

Result<CompareCounts> Session::compare(const void* a, const void* b, const TensorSpec& tensor,
                                       double atol, double rtol) {
  STITCH_CUDA_TRY(counters_.zero(stream_), "zeroing counters");
  STITCH_CUDA_TRY(compare_elements(a, b, tensor.dtype, geometry_of(tensor), atol, rtol,
                                   counters_.compare_slot(0), stream_),
                  "comparing outputs");
  STITCH_ASSIGN_OR_RETURN(auto values, counters_.read(stream_));
  return CompareCounts{values[0], values[1], values[2]};
}

Result<uint64_t> Session::byte_mismatches(const void* a, const void* b, uint64_t bytes) {
  STITCH_CUDA_TRY(counters_.zero(stream_), "zeroing counters");
  STITCH_CUDA_TRY(count_byte_mismatches(a, b, bytes, counters_.slot(0), stream_),
                  "comparing inputs");
  STITCH_ASSIGN_OR_RETURN(auto values, counters_.read(stream_));
  return static_cast<uint64_t>(values[0]);
}

Result<uint64_t> Session::input_checksum(const IoSet& io) {
  STITCH_CUDA_TRY(counters_.zero(stream_), "zeroing counters");
  for (size_t j = 0; j < io.inputs.size(); ++j)
    STITCH_CUDA_TRY(
        checksum_bytes(io.inputs[j].data(), io.inputs[j].payload_bytes(),
                       counters_.slot(static_cast<int>(j % DeviceCounters::kSlots)), stream_),
        "checksumming inputs");
  STITCH_ASSIGN_OR_RETURN(auto values, counters_.read(stream_));
  uint64_t combined = 0;
  for (size_t j = 0; j < values.size(); ++j)
    combined = combined * 0x100000001B3ull + values[j];
  return combined;
}

Status Session::reset_caches(int iteration) {
  // Persisting lines first (row 14), then the flush evicts whatever is left.
  auto ignore = [](cudaError_t status) {
    if (status != cudaSuccess) cudaGetLastError();  // unsupported here; keep the error state clean
  };
  ignore(cudaCtxResetPersistingL2Cache());
  ignore(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 0));
  cudaStreamAttrValue window{};
  window.accessPolicyWindow.base_ptr = nullptr;
  window.accessPolicyWindow.num_bytes = 0;
  window.accessPolicyWindow.hitRatio = 0;
  window.accessPolicyWindow.hitProp = cudaAccessPropertyNormal;
  window.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
  ignore(cudaStreamSetAttribute(stream_, cudaStreamAttributeAccessPolicyWindow, &window));
  STITCH_CUDA_TRY(cudaMemsetAsync(l2_flush_.data(), iteration & 0xFF, l2_flush_.bytes(), stream_),
                  "flushing L2");
  return {};
}

Result<Flow> Session::idle_check(const std::string& label, const char* json_key) {
  auto start = Clock::now();
  cudaError_t status;
  {
    WatchdogScope scope(
        watchdog_, {label, options_.idle_timeout_s, "persistent_kernel",
                    fmt::format("{}: the device was still busy after {} s: a kernel outlives the "
                                "call that launched it",
                                label, options_.idle_timeout_s)});
    status = cudaDeviceSynchronize();
  }
  double ms = ms_since(start);
  report_.update([&](json& doc) { doc["idle_check"][json_key] = ms; });
  if (status != cudaSuccess) {
    stop_with(RunStatus::cuda_error, cuda_error(status, label).message);
    return Flow::stop;
  }
  return Flow::proceed;
}

void Session::inspect_threads(const std::vector<int>& before, const std::string& label) {
  std::vector<int> after = list_threads();
  max_threads_after_forward_ = std::max(max_threads_after_forward_, static_cast<int>(after.size()));
  std::vector<int> started;
  for (int tid : threads_started(after, before))
    if (!reported_threads_.count(tid)) started.push_back(tid);
  if (started.empty()) return;
  reported_threads_.insert(started.begin(), started.end());
  report_.add_finding("host_thread",
                      fmt::format("{}: {} thread(s) started in stitch_forward still run after it "
                                  "returned: {}",
                                  label, started.size(), describe_threads(started)));
}

void Session::inspect_processes(const std::string& label) {
  std::vector<int> children = list_child_processes();
  if (!children.empty()) {
    std::string pids;
    for (int pid : children)
      pids += fmt::format("{}{}", pids.empty() ? "" : ", ", pid);
    report_.add_finding("hidden_work",
                        fmt::format("{}: child process(es) {} found (killed)", label, pids));
    kill_processes(children);
  }
  uint64_t refused = 0;
  std::string calls;
  for (const auto& refusal : seccomp_refusals()) {
    refused += refusal.count;
    calls += fmt::format("{}{} x{}", calls.empty() ? "" : ", ", refusal.name, refusal.count);
  }
  if (refused > seccomp_refusals_seen_) {
    seccomp_refusals_seen_ = refused;
    report_.add_finding("hidden_work",
                        fmt::format("{}: the program made system calls the sandbox refuses "
                                    "(a process, exec, or a call outside the allowlist: {})",
                                    label, calls));
  }
}

}  // namespace stitch::runner
