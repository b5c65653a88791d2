// profile.json: one forward of a program (or of the PyTorch reference) as the Planner and the
// feedback code read it — kernels by time with their bottleneck, the GPU timeline, GPU busy time
// against the forward's wall time. Built from the runner's timeline (stitch-runner --profile) plus
// ncu counters, or read back from a file written here or by python/stitch_harness/
// profile_reference.py (same schema).
//
// profile.json (format "stitchcuda.profile", version 1). The fields marked * are the minimal
// schema every producer writes; the rest may be absent or null:
//   source* ("cupti" | "torch.profiler"), program, device {name, sm_count, peaks|null},
//   forward_ms*, gpu_busy_ms* (null without a timeline), gpu_busy_share, idle_ms, kernel_ms,
//   copy_ms, memset_ms, untraced_forward_ms, host_ms (until the forward call returned), gaps
//   {count, largest_ms, leading_ms, trailing_ms}, forward_bottleneck, forward_bottleneck_reason,
//   kernels* [{name*, mangled_name, launches, duration_ms* (all launches), mean_ms, share_pct
//              (of the forward), mean_gap_before_ms, grid, block, registers_per_thread,
//              static_shared_bytes, dynamic_shared_bytes, stream_id, bottleneck*,
//              bottleneck_reason, dram_pct*, memory_pct, sm_pct*, occupancy_pct* (these four
//              are absent, not null, when not measured: readers use value(key, default)),
//              counters {ncu metrics, base units}|null, roofline {...}|null}]  largest first,
//   timeline [{type, name, start_ns, end_ns, gap_before_ns, bytes, stream_id}],
//   api {...as the runner wrote it}, cupti {available, detail},
//   ncu {attempted, path, detail, metrics [..], profiled}, nsys {found, path}, notes* [..]
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"
#include "verify/profile/profile_rules.h"

namespace stitch {

struct ProfileActivity {
  std::string type;  // "kernel", "memcpy", "memset"
  std::string name;
  int64_t start_ns = 0;  // from the forward's start
  int64_t end_ns = 0;
  int64_t gap_before_ns = 0;
  uint64_t bytes = 0;  // copies and memsets
  uint32_t stream_id = 0;
};

// All launches of one kernel (same mangled name) in the traced forward.
struct ProfileKernel {
  std::string name;          // demangled
  std::string mangled_name;  // what ncu filters on; empty when the source gives none
  int launches = 0;
  double total_ns = 0;
  double mean_gap_before_ns = 0;
  std::array<int64_t, 3> grid{};  // of the first launch
  std::array<int64_t, 3> block{};
  int registers_per_thread = 0;
  int64_t static_shared_bytes = 0;
  int64_t dynamic_shared_bytes = 0;
  uint32_t stream_id = 0;
  std::optional<KernelCounters> counters;  // ncu, one launch
  std::optional<RooflinePoint> roofline;
  Bottleneck bottleneck = Bottleneck::unknown;
  std::string bottleneck_reason;

  double mean_ns() const { return launches > 0 ? total_ns / launches : 0; }
  int64_t grid_blocks() const {
    return grid[0] * std::max<int64_t>(grid[1], 1) * std::max<int64_t>(grid[2], 1);
  }
};

struct NcuSummary {
  bool attempted = false;
  std::string path;
  std::string detail;  // what happened, one line
  std::vector<std::string> metrics;
  int profiled = 0;  // kernels with counters
};

struct ProfileReport {
  std::string source = "cupti";
  std::string program;
  std::string device_name;
  int sm_count = 0;
  double forward_ns = 0;
  std::optional<double> gpu_busy_ns;  // nullopt: no timeline (CUPTI unavailable)
  double kernel_ns = 0, copy_ns = 0, memset_ns = 0;
  int64_t leading_gap_ns = 0, trailing_gap_ns = 0, largest_gap_ns = 0;
  int gap_count = 0;
  std::optional<double> untraced_forward_ms;  // median CUDA-event time of the untraced warm-ups
  std::optional<double> host_ns;              // host time inside stitch_forward (the call's return)
  std::vector<ProfileKernel> kernels;         // by total time, largest first
  std::vector<ProfileActivity> timeline;
  nlohmann::json api = nlohmann::json::object();
  bool cupti_available = false;
  std::string cupti_detail;
  NcuSummary ncu;
  bool nsys_checked = false;
  std::string nsys_path;  // empty: not on PATH
  std::optional<GpuPeaks> peaks;
  Bottleneck forward_bottleneck = Bottleneck::unknown;
  std::string forward_bottleneck_reason;
  std::vector<std::string> notes;

  // gpu_busy_ns / forward_ns, or -1 when unknown.
  double busy_share() const;
};

// The runner's timeline document (src/runner/profile_timeline.h). An Error when it is not one or
// its status is not "ok" (the message says why: no device, init failed, ...).
Result<ProfileReport> report_from_timeline(const nlohmann::json& timeline);

// Fills each kernel's bottleneck, reason and roofline, and the forward's, from what the report
// holds (counters, timeline, peaks).
void classify_report(ProfileReport& report, const BottleneckRules& rules);

nlohmann::json profile_to_json(const ProfileReport& report);
// Reads profile.json as written by profile_to_json or profile_reference.py.
Result<ProfileReport> profile_from_json(const nlohmann::json& document);

// The table `stitchcuda profile` prints: one line per kernel (time, % of forward, DRAM %, SM %,
// occupancy, bottleneck) under a summary of the forward.
std::string format_profile_table(const ProfileReport& report, size_t max_kernels = 20);

}  // namespace stitch
