// Bottleneck rules and the roofline; see profile_rules.h for the rules.
#include "verify/profile/profile_rules.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "util/gpu_peaks.h"

namespace stitch {
namespace {

std::string percent(double value) {
  return fmt::format("{:.0f}%", value);
}

}  // namespace

std::optional<double> KernelCounters::memory_throughput_pct() const {
  return memory_pct ? memory_pct : dram_pct;
}

std::optional<double> KernelCounters::dram_bytes() const {
  if (!dram_read_bytes || !dram_write_bytes) return std::nullopt;
  return *dram_read_bytes + *dram_write_bytes;
}

std::optional<GpuPeaks> peaks_for_device(std::string_view device_name) {
  const GpuPeakRow* row = find_gpu_peaks(device_name);
  if (!row) return std::nullopt;
  return GpuPeaks{std::string(row->key), row->fp32_tflops * 1e12, row->dram_gbps * 1e9,
                  std::string(row->source)};
}

std::optional<RooflinePoint> roofline_point(const KernelCounters& counters, const GpuPeaks& peaks,
                                            double duration_ns) {
  std::optional<double> bytes = counters.dram_bytes();
  double seconds = (counters.duration_ns ? *counters.duration_ns : duration_ns) * 1e-9;
  if (!counters.flops || !bytes || seconds <= 0 || peaks.fp32_flops_per_s <= 0 ||
      peaks.dram_bytes_per_s <= 0)
    return std::nullopt;
  RooflinePoint point;
  point.flops = *counters.flops;
  point.dram_bytes = *bytes;
  // A kernel that moves no DRAM bytes (all in L2) sits infinitely far right; cap it at a large
  // finite value so the JSON stays a number.
  point.intensity = point.dram_bytes > 0 ? point.flops / point.dram_bytes : 1e9;
  point.ridge = peaks.ridge_flops_per_byte();
  point.achieved_flops_per_s = point.flops / seconds;
  point.achieved_bytes_per_s = point.dram_bytes / seconds;
  point.roof_flops_per_s =
      std::min(peaks.fp32_flops_per_s, point.intensity * peaks.dram_bytes_per_s);
  point.efficiency = point.memory_side() ? point.achieved_bytes_per_s / peaks.dram_bytes_per_s
                                         : point.achieved_flops_per_s / peaks.fp32_flops_per_s;
  return point;
}

Classification classify_kernel(const std::optional<KernelCounters>& counters,
                               const KernelTimelineFacts& facts, const BottleneckRules& rules) {
  if (facts.forward_busy_share >= 0 && facts.forward_busy_share < rules.launch_busy_share_max &&
      facts.gap_before_ns >= facts.duration_ns && facts.gap_before_ns > 0)
    return {Bottleneck::launch_host,
            fmt::format("GPU busy {} of the forward; {:.1f} us idle before each launch vs {:.1f} "
                        "us of work",
                        percent(100 * facts.forward_busy_share), facts.gap_before_ns / 1e3,
                        facts.duration_ns / 1e3)};
  if (!counters) return {Bottleneck::unknown, "no hardware counters for this kernel"};
  std::optional<double> memory = counters->memory_throughput_pct();
  std::optional<double> sm = counters->sm_pct;
  if (!memory || !sm) return {Bottleneck::unknown, "memory or SM throughput counter missing"};
  std::string numbers = fmt::format("memory {}, SM {}", percent(*memory), percent(*sm));
  if (*memory >= rules.memory_pct_min && *memory >= *sm)
    return {Bottleneck::memory, numbers + ": memory system near its sustained peak"};
  if (*sm >= rules.compute_pct_min)
    return {Bottleneck::compute, numbers + ": SM pipelines near their sustained peak"};
  if (*memory < rules.latency_pct_max && *sm < rules.latency_pct_max) {
    std::vector<std::string> causes;
    if (counters->occupancy_pct && *counters->occupancy_pct < rules.low_occupancy_pct)
      causes.push_back("low achieved occupancy " + percent(*counters->occupancy_pct));
    int64_t blocks =
        counters->grid_blocks ? static_cast<int64_t>(*counters->grid_blocks) : facts.grid_blocks;
    if (blocks > 0 && facts.sm_count > 0 && blocks < facts.sm_count)
      causes.push_back(fmt::format("grid of {} blocks < {} SMs", blocks, facts.sm_count));
    if (causes.empty()) causes.push_back("stalls (dependent loads, synchronisation)");
    std::string joined;
    for (const std::string& cause : causes)
      joined += (joined.empty() ? "" : ", ") + cause;
    return {Bottleneck::latency, numbers + ": neither saturated; " + joined};
  }
  return {Bottleneck::balanced, numbers + ": no single unit near its peak"};
}

Classification classify_forward(double busy_share,
                                const std::vector<std::pair<Bottleneck, double>>& kernel_time,
                                const BottleneckRules& rules) {
  if (busy_share >= 0 && busy_share < rules.launch_busy_share_max)
    return {Bottleneck::launch_host,
            fmt::format("GPU busy only {} of the forward's wall time: launch/host bound",
                        percent(100 * busy_share))};
  std::array<double, kBottleneckNames.size()> time_by_class{};
  double total = 0;
  for (const auto& [bottleneck, time] : kernel_time) {
    time_by_class[static_cast<size_t>(bottleneck)] += time;
    total += time;
  }
  if (total <= 0) return {Bottleneck::unknown, "no kernel time"};
  size_t best = static_cast<size_t>(std::max_element(time_by_class.begin(), time_by_class.end()) -
                                    time_by_class.begin());
  return {static_cast<Bottleneck>(best),
          fmt::format("{} of kernel time in {} kernels", percent(100 * time_by_class[best] / total),
                      kBottleneckNames[best])};
}

}  // namespace stitch
