// The arithmetic of a traced forward, kept free of CUDA and CUPTI so it is tested on a CPU: GPU
// activities placed relative to the forward's start, the gaps between them, GPU busy time (the
// union of activity intervals, so overlapping streams are not counted twice) against the
// forward's wall time, and the launch statistics of the API-traced forward.
//
// JSON written by `stitch-runner --profile OUT.json` (format "stitchcuda.profile_timeline",
// version 1; src/verify/profile/profile_report.cc reads it):
//   program, device {index, name, sm_count, l2_bytes},
//   cupti {available, detail, dropped_buffers},
//   warmup, untraced {event_ms [..], wall_ms [..]}   (the warm-up forwards, no tracing)
//   forward {wall_ns, host_ns, event_ms, wall_ms, traced}   (the traced forward; host_ns: until
//                                                            stitch_forward returned)
//   activities [{type "kernel"|"memcpy"|"memset", name, start_ns, end_ns, duration_ns,
//                gap_before_ns, stream_id, correlation_id,
//                kernel: mangled_name, grid [3], block [3], registers_per_thread,
//                        static_shared_bytes, dynamic_shared_bytes, local_bytes_per_thread,
//                memcpy: direction, bytes;  memset: bytes, value}]   sorted by start, times in ns
//                                                                    from the forward's start
//   totals {forward_ns, gpu_busy_ns, gpu_busy_share, kernel_ns, copy_ns, memset_ns, idle_ns,
//           leading_gap_ns, trailing_gap_ns, largest_gap_ns, gap_count, kernels, copies, memsets}
//   api {traced, detail, wall_ns, calls [{name, count, total_ns}], launches, launch_api_mean_ns,
//        launch_to_start_mean_ns, launch_to_start_max_ns, host_api_ns}
//   notes [..]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/profile_trace.h"

namespace stitch::runner {

enum class ActivityType { kernel, memcpy, memset };

// One GPU activity of the traced forward, times relative to the forward's start.
struct TimelineActivity {
  ActivityType type = ActivityType::kernel;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t gap_before_ns = 0;  // idle GPU time between the previous activities' end and this start
  size_t source_index = 0;    // index into the TraceRecords vector of its type
};

struct TimelineTotals {
  int64_t forward_ns = 0;
  int64_t gpu_busy_ns = 0;
  double gpu_busy_share = 0;  // gpu_busy_ns / forward_ns
  int64_t kernel_ns = 0;      // sums of durations (overlaps counted once per activity)
  int64_t copy_ns = 0;
  int64_t memset_ns = 0;
  int64_t idle_ns = 0;  // forward_ns - gpu_busy_ns
  int64_t leading_gap_ns = 0;
  int64_t trailing_gap_ns = 0;
  int64_t largest_gap_ns = 0;
  int gap_count = 0;  // gaps > 0 between activities (leading and trailing not counted)
  int kernels = 0, copies = 0, memsets = 0;
};

struct Timeline {
  std::vector<TimelineActivity> activities;  // sorted by start
  TimelineTotals totals;
};

// Places the records of one forward that ran in [begin_ns, end_ns] (CUPTI clock) on a timeline;
// records that started outside the window are left out.
Timeline build_timeline(const TraceRecords& records, uint64_t begin_ns, uint64_t end_ns);

struct ApiSummary {
  struct Call {
    std::string name;
    int count = 0;
    int64_t total_ns = 0;
  };
  std::vector<Call> calls;  // by total time, largest first
  int launches = 0;         // calls that launch work (names holding "Launch")
  double launch_api_mean_ns = 0;
  double launch_to_start_mean_ns = 0;  // API call start → its kernel's start on the GPU
  int64_t launch_to_start_max_ns = 0;
  int64_t host_api_ns = 0;  // union of API call intervals (nested driver calls counted once)
};

// API calls made in [begin_ns, calls_end_ns] (the program's own: the runner's synchronize after
// the call is left out), kernels started in [begin_ns, end_ns].
ApiSummary summarize_api(const TraceRecords& records, uint64_t begin_ns, uint64_t calls_end_ns,
                         uint64_t end_ns);

// The JSON above, without program/device/cupti/untraced/forward/notes (the session adds those).
nlohmann::json timeline_to_json(const Timeline& timeline, const TraceRecords& records);
nlohmann::json api_to_json(const ApiSummary& summary);

}  // namespace stitch::runner
