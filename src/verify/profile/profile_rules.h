// What limits a kernel, from its hardware counters and its place on the forward's timeline: the
// bottleneck rules, the roofline position, and the table of GPU peaks they are measured against.
// Pure functions on plain numbers, unit-tested on a CPU with synthetic metrics.
//
// Bottleneck rules (percentages are ncu's "% of peak sustained"; thresholds in BottleneckRules),
// applied in this order, the first that matches wins:
//   1. launch_host — the forward's GPU busy share (union of GPU activity / wall time of the
//      forward) is below 50% AND the idle time before this kernel's launches is at least its own
//      run time: the GPU waits for the host more than it works on this kernel, so no counter of
//      the kernel itself says what to fix (fuse launches, CUDA graphs, less host work).
//   2. unknown — no counters (ncu not run, not permitted, or this kernel outside the top N).
//   3. memory — memory throughput % >= 60 and >= SM throughput %. Memory throughput is
//      gpu__compute_memory_throughput (the busiest of DRAM, L2, L1) when present, else DRAM %.
//   4. compute — SM throughput % >= 60.
//   5. latency — both below 40: neither the memory system nor the SMs are kept busy. The reason
//      names low achieved occupancy (< 40%) or a grid smaller than the SM count when either
//      holds, else stalls (dependent loads, synchronisation).
//   6. balanced — anything else (the larger of the two between 40 and 60): no single limiter.
// The forward as a whole is launch_host when its GPU busy share is below 50%, else the class
// holding the most kernel time.
//
// Roofline: arithmetic intensity = FLOPs / DRAM bytes (read + write). FLOPs come from the SASS
// floating-point counters (FADD + FMUL + 2·FFMA, and the FP64/FP16 ones) — tensor-core work is not
// in them, so a tensor-core kernel's intensity is a lower bound. The ridge point is peak FLOP/s /
// peak DRAM bytes/s (plain FP32, not tensor cores); below it a kernel is memory-side, above it
// compute-side. Efficiency = achieved FLOP/s (or bytes/s on the memory side) / the roof there.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/enum_names.h"

namespace stitch {

enum class Bottleneck : uint8_t { memory, compute, latency, launch_host, balanced, unknown };
inline constexpr std::array<std::string_view, 6> kBottleneckNames = {
    "memory", "compute", "latency", "launch_host", "balanced", "unknown"};
constexpr const auto& enum_names(Bottleneck) { return kBottleneckNames; }
static_assert(names_every_enumerator(Bottleneck::unknown));

// Counters of one kernel launch as ncu reported them (base units: ns, bytes, %). Every field is
// optional: a GPU or ncu version may lack a metric.
struct KernelCounters {
  std::optional<double> duration_ns;    // gpu__time_duration.sum
  std::optional<double> sm_pct;         // sm__throughput...pct_of_peak_sustained_elapsed
  std::optional<double> memory_pct;     // gpu__compute_memory_throughput...
  std::optional<double> dram_pct;       // dram__throughput...
  std::optional<double> occupancy_pct;  // sm__warps_active...pct_of_peak_sustained_active
  std::optional<double> theoretical_occupancy_pct;  // sm__maximum_warps_per_active_cycle_pct
  std::optional<double> dram_read_bytes;            // dram__bytes_read.sum
  std::optional<double> dram_write_bytes;           // dram__bytes_write.sum
  std::optional<double> flops;                      // FP32 + FP64 + FP16 from SASS counters
  std::optional<double> tensor_pipe_pct;            // tensor pipe active, when readable
  std::optional<double> grid_blocks;                // launch__grid_size
  std::optional<double> block_threads;              // launch__block_size
  std::optional<double> registers_per_thread;       // launch__registers_per_thread
  std::map<std::string, double> raw;                // every metric read, by ncu name

  // memory_pct when present, else dram_pct.
  std::optional<double> memory_throughput_pct() const;
  std::optional<double> dram_bytes() const;  // read + write, when both are known
};

// Peak rates of one GPU model, in the units the roofline uses; from the one table in
// util/gpu_peaks.h (vendor datasheets: leads, not measurements).
struct GpuPeaks {
  std::string name;             // the key that matched, or "override"
  double fp32_flops_per_s = 0;  // plain FP32 (CUDA cores), not tensor cores
  double dram_bytes_per_s = 0;
  std::string source;  // where the numbers come from

  double ridge_flops_per_byte() const {
    return dram_bytes_per_s > 0 ? fp32_flops_per_s / dram_bytes_per_s : 0;
  }
};
// The table row for `device_name` (find_gpu_peaks); nullopt when the GPU is not in the table.
std::optional<GpuPeaks> peaks_for_device(std::string_view device_name);

struct RooflinePoint {
  double flops = 0;
  double dram_bytes = 0;
  double intensity = 0;  // FLOP per DRAM byte
  double ridge = 0;      // FLOP per byte where the two roofs meet
  double achieved_flops_per_s = 0;
  double achieved_bytes_per_s = 0;
  double roof_flops_per_s = 0;  // min(peak FLOP/s, intensity * peak bytes/s)
  double efficiency = 0;        // of the roof that binds at this intensity, 0..1
  bool memory_side() const { return intensity < ridge; }
};

// Needs FLOPs, DRAM bytes and a duration (counters' own, else `duration_ns`); nullopt otherwise.
std::optional<RooflinePoint> roofline_point(const KernelCounters& counters, const GpuPeaks& peaks,
                                            double duration_ns);

struct BottleneckRules {
  double memory_pct_min = 60;
  double compute_pct_min = 60;
  double latency_pct_max = 40;
  double low_occupancy_pct = 40;
  double launch_busy_share_max = 0.5;
};

// What the timeline says about a kernel (means over its launches in the traced forward).
struct KernelTimelineFacts {
  double duration_ns = 0;
  double gap_before_ns = 0;
  double forward_busy_share = -1;  // < 0: unknown (no timeline)
  int64_t grid_blocks = 0;         // 0: unknown
  int sm_count = 0;                // 0: unknown
};

struct Classification {
  Bottleneck bottleneck = Bottleneck::unknown;
  std::string reason;
};

Classification classify_kernel(const std::optional<KernelCounters>& counters,
                               const KernelTimelineFacts& facts, const BottleneckRules& rules);

// `kernel_time` holds each kernel's class and its time in the forward.
Classification classify_forward(double busy_share,
                                const std::vector<std::pair<Bottleneck, double>>& kernel_time,
                                const BottleneckRules& rules);

}  // namespace stitch
