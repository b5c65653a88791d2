// Timeline arithmetic and its JSON; see profile_timeline.h.
#include "runner/profile_timeline.h"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "util/enum_names.h"

namespace stitch::runner {
namespace {

using nlohmann::json;

bool in_window(uint64_t start, uint64_t begin_ns, uint64_t end_ns) {
  return start >= begin_ns && start <= end_ns;
}

int64_t relative(uint64_t t, uint64_t begin_ns) {
  return static_cast<int64_t>(t) - static_cast<int64_t>(begin_ns);
}

std::string_view type_name(ActivityType type) {
  static constexpr std::array<std::string_view, 3> kNames = {"kernel", "memcpy", "memset"};
  static_assert(kNames.size() == static_cast<size_t>(ActivityType::memset) + 1);
  return enum_name(kNames, type, "kernel");
}

// What every GPU activity's entry says beyond its place in the timeline.
void add_span(json& entry, const TraceSpan& span) {
  entry["stream_id"] = span.stream_id;
  entry["correlation_id"] = span.correlation_id;
}

}  // namespace

Timeline build_timeline(const TraceRecords& records, uint64_t begin_ns, uint64_t end_ns) {
  Timeline timeline;
  TimelineTotals& totals = timeline.totals;
  totals.forward_ns = end_ns > begin_ns ? static_cast<int64_t>(end_ns - begin_ns) : 0;
  // Adds the activities of `spans` that started in the window, counting them in `count`.
  auto add = [&](ActivityType type, const auto& spans, int& count) {
    for (size_t i = 0; i < spans.size(); ++i) {
      const TraceSpan& span = spans[i];
      if (!in_window(span.start_ns, begin_ns, end_ns)) continue;
      // An activity still running when the window closed (it cannot, after a device
      // synchronize, but clocks differ by a little) is clipped to the window.
      int64_t s = relative(span.start_ns, begin_ns);
      int64_t e =
          std::min(relative(std::max(span.end_ns, span.start_ns), begin_ns), totals.forward_ns);
      timeline.activities.push_back({type, s, std::max(e, s), 0, i});
      ++count;
    }
  };
  add(ActivityType::kernel, records.kernels, totals.kernels);
  add(ActivityType::memcpy, records.copies, totals.copies);
  add(ActivityType::memset, records.memsets, totals.memsets);
  std::stable_sort(
      timeline.activities.begin(), timeline.activities.end(),
      [](const TimelineActivity& a, const TimelineActivity& b) { return a.start_ns < b.start_ns; });

  // One sweep: `covered_until` is the end of the union of everything seen so far.
  int64_t covered_until = 0;
  for (size_t i = 0; i < timeline.activities.size(); ++i) {
    TimelineActivity& activity = timeline.activities[i];
    int64_t duration = activity.end_ns - activity.start_ns;
    switch (activity.type) {
      case ActivityType::kernel:
        totals.kernel_ns += duration;
        break;
      case ActivityType::memcpy:
        totals.copy_ns += duration;
        break;
      case ActivityType::memset:
        totals.memset_ns += duration;
        break;
    }
    if (activity.start_ns > covered_until) {
      activity.gap_before_ns = activity.start_ns - covered_until;
      if (i == 0) {
        totals.leading_gap_ns = activity.gap_before_ns;
      } else {
        ++totals.gap_count;
        totals.largest_gap_ns = std::max(totals.largest_gap_ns, activity.gap_before_ns);
      }
      totals.gpu_busy_ns += duration;
    } else {
      totals.gpu_busy_ns += std::max<int64_t>(0, activity.end_ns - covered_until);
    }
    covered_until = std::max(covered_until, activity.end_ns);
  }
  if (timeline.activities.empty()) {
    totals.leading_gap_ns = totals.forward_ns;
  } else {
    totals.trailing_gap_ns = std::max<int64_t>(0, totals.forward_ns - covered_until);
  }
  totals.idle_ns = std::max<int64_t>(0, totals.forward_ns - totals.gpu_busy_ns);
  totals.gpu_busy_share =
      totals.forward_ns > 0 ? static_cast<double>(totals.gpu_busy_ns) / totals.forward_ns : 0;
  return timeline;
}

ApiSummary summarize_api(const TraceRecords& records, uint64_t begin_ns, uint64_t calls_end_ns,
                         uint64_t end_ns) {
  ApiSummary summary;
  std::map<std::string, ApiSummary::Call> by_name;
  std::unordered_map<uint32_t, const TracedApiCall*> launch_by_correlation;
  std::vector<std::pair<uint64_t, uint64_t>> intervals;
  int64_t launch_api_total = 0;
  for (const TracedApiCall& call : records.api_calls) {
    if (!in_window(call.start_ns, begin_ns, calls_end_ns)) continue;
    ApiSummary::Call& entry = by_name[call.name];
    entry.name = call.name;
    ++entry.count;
    int64_t duration = call.end_ns > call.start_ns ? int64_t(call.end_ns - call.start_ns) : 0;
    entry.total_ns += duration;
    intervals.emplace_back(call.start_ns, std::max(call.end_ns, call.start_ns));
    if (call.name.find("Launch") != std::string::npos) {
      ++summary.launches;
      launch_api_total += duration;
      // The runtime call and the driver call it makes share a correlation id only in some CUPTI
      // versions; the outermost (earliest) one is what the program paid for.
      auto [it, inserted] = launch_by_correlation.emplace(call.correlation_id, &call);
      if (!inserted && call.start_ns < it->second->start_ns) it->second = &call;
    }
  }
  for (auto& [name, call] : by_name)
    summary.calls.push_back(call);
  std::sort(summary.calls.begin(), summary.calls.end(),
            [](const auto& a, const auto& b) { return a.total_ns > b.total_ns; });
  if (summary.launches > 0)
    summary.launch_api_mean_ns = double(launch_api_total) / summary.launches;

  std::sort(intervals.begin(), intervals.end());
  uint64_t covered_until = 0;
  for (auto [start, end] : intervals) {
    if (start >= covered_until) {
      summary.host_api_ns += int64_t(end - start);
    } else if (end > covered_until) {
      summary.host_api_ns += int64_t(end - covered_until);
    }
    covered_until = std::max(covered_until, end);
  }

  int matched = 0;
  int64_t latency_total = 0;
  for (const TracedKernel& kernel : records.kernels) {
    if (!in_window(kernel.start_ns, begin_ns, end_ns)) continue;
    auto it = launch_by_correlation.find(kernel.correlation_id);
    if (it == launch_by_correlation.end() || kernel.start_ns < it->second->start_ns) continue;
    int64_t latency = int64_t(kernel.start_ns - it->second->start_ns);
    latency_total += latency;
    summary.launch_to_start_max_ns = std::max(summary.launch_to_start_max_ns, latency);
    ++matched;
  }
  if (matched > 0) summary.launch_to_start_mean_ns = double(latency_total) / matched;
  return summary;
}

json timeline_to_json(const Timeline& timeline, const TraceRecords& records) {
  json activities = json::array();
  for (const TimelineActivity& activity : timeline.activities) {
    json entry = {{"type", type_name(activity.type)},
                  {"start_ns", activity.start_ns},
                  {"end_ns", activity.end_ns},
                  {"duration_ns", activity.end_ns - activity.start_ns},
                  {"gap_before_ns", activity.gap_before_ns}};
    switch (activity.type) {
      case ActivityType::kernel: {
        const TracedKernel& k = records.kernels[activity.source_index];
        entry["name"] = demangle_kernel_name(k.mangled_name);
        entry["mangled_name"] = k.mangled_name;
        add_span(entry, k);
        entry["grid"] = {k.grid[0], k.grid[1], k.grid[2]};
        entry["block"] = {k.block[0], k.block[1], k.block[2]};
        entry["registers_per_thread"] = k.registers_per_thread;
        entry["static_shared_bytes"] = k.static_shared_bytes;
        entry["dynamic_shared_bytes"] = k.dynamic_shared_bytes;
        entry["local_bytes_per_thread"] = k.local_bytes_per_thread;
        break;
      }
      case ActivityType::memcpy: {
        const TracedCopy& c = records.copies[activity.source_index];
        entry["name"] = "memcpy " + c.direction;
        entry["direction"] = c.direction;
        entry["bytes"] = c.bytes;
        add_span(entry, c);
        break;
      }
      case ActivityType::memset: {
        const TracedMemset& m = records.memsets[activity.source_index];
        entry["name"] = "memset";
        entry["bytes"] = m.bytes;
        entry["value"] = m.value;
        add_span(entry, m);
        break;
      }
    }
    activities.push_back(std::move(entry));
  }
  const TimelineTotals& t = timeline.totals;
  return {{"activities", std::move(activities)},
          {"totals",
           {{"forward_ns", t.forward_ns},
            {"gpu_busy_ns", t.gpu_busy_ns},
            {"gpu_busy_share", t.gpu_busy_share},
            {"kernel_ns", t.kernel_ns},
            {"copy_ns", t.copy_ns},
            {"memset_ns", t.memset_ns},
            {"idle_ns", t.idle_ns},
            {"leading_gap_ns", t.leading_gap_ns},
            {"trailing_gap_ns", t.trailing_gap_ns},
            {"largest_gap_ns", t.largest_gap_ns},
            {"gap_count", t.gap_count},
            {"kernels", t.kernels},
            {"copies", t.copies},
            {"memsets", t.memsets}}}};
}

json api_to_json(const ApiSummary& summary) {
  json calls = json::array();
  for (const auto& call : summary.calls)
    calls.push_back({{"name", call.name}, {"count", call.count}, {"total_ns", call.total_ns}});
  return {{"calls", std::move(calls)},
          {"launches", summary.launches},
          {"launch_api_mean_ns", summary.launch_api_mean_ns},
          {"launch_to_start_mean_ns", summary.launch_to_start_mean_ns},
          {"launch_to_start_max_ns", summary.launch_to_start_max_ns},
          {"host_api_ns", summary.host_api_ns}};
}

}  // namespace stitch::runner
