// Building profile.json from the runner's timeline, classifying, reading it back, and the table;
// see profile_report.h.
#include "verify/profile/profile_report.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "util/json_fields.h"

namespace stitch {
namespace {

using nlohmann::json;

constexpr size_t kMaxTimelineEntries = 5000;

std::array<int64_t, 3> dims(const json& object, const char* key) {
  std::array<int64_t, 3> out{};
  if (!object.contains(key) || !object[key].is_array()) return out;
  for (size_t i = 0; i < 3 && i < object[key].size(); ++i)
    if (object[key][i].is_number_integer()) out[i] = object[key][i].get<int64_t>();
  return out;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

json counters_to_json(const KernelCounters& c) {
  json metrics = json::object();
  for (const auto& [name, value] : c.raw)
    metrics[name] = value;
  return {{"duration_ns", optional_number(c.duration_ns)},
          {"dram_read_bytes", optional_number(c.dram_read_bytes)},
          {"dram_write_bytes", optional_number(c.dram_write_bytes)},
          {"flops", optional_number(c.flops)},
          {"theoretical_occupancy_pct", optional_number(c.theoretical_occupancy_pct)},
          {"tensor_pipe_pct", optional_number(c.tensor_pipe_pct)},
          {"metrics", std::move(metrics)}};
}

json roofline_to_json(const RooflinePoint& p) {
  return {{"flops", p.flops},
          {"dram_bytes", p.dram_bytes},
          {"intensity_flops_per_byte", p.intensity},
          {"ridge_flops_per_byte", p.ridge},
          {"achieved_tflops", p.achieved_flops_per_s / 1e12},
          {"achieved_dram_tbps", p.achieved_bytes_per_s / 1e12},
          {"roof_tflops", p.roof_flops_per_s / 1e12},
          {"side", p.memory_side() ? "memory" : "compute"},
          {"efficiency", p.efficiency}};
}

// "void (anonymous namespace)::kernel<float, 4>(float const*, int)" → "kernel<float, 4>".
std::string short_name(const std::string& name) {
  std::string text = name;
  if (!text.empty() && text.back() == ')') {  // the parameter list: the last bracketed group
    int depth = 0;
    for (size_t i = text.size(); i-- > 0;) {
      if (text[i] == ')') ++depth;
      if (text[i] == '(' && --depth == 0) {
        text.resize(i);
        break;
      }
    }
  }
  // A leading return type ends at the last space outside brackets.
  int depth = 0;
  size_t cut = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' || text[i] == '(') ++depth;
    if (text[i] == '>' || text[i] == ')') --depth;
    if (text[i] == ' ' && depth == 0) cut = i;
  }
  if (cut != std::string::npos) text = text.substr(cut + 1);
  for (const std::string anonymous = "(anonymous namespace)::";
       text.find(anonymous) != std::string::npos;)
    text.erase(text.find(anonymous), anonymous.size());
  return text.empty() ? name : text;
}

// The "notes" strings of a timeline or a profile.
void read_notes(const json& document, ProfileReport& report) {
  if (document.contains("notes") && document["notes"].is_array())
    for (const json& note : document["notes"])
      if (note.is_string()) report.notes.push_back(note.get<std::string>());
}

std::string cell_pct(const std::optional<double>& value) {
  return value ? fmt::format("{:.1f}", *value) : "-";
}

}  // namespace

double ProfileReport::busy_share() const {
  if (!gpu_busy_ns || forward_ns <= 0) return -1;
  return *gpu_busy_ns / forward_ns;
}

namespace {

// The device, CUPTI and forward totals of a timeline, and its untraced times and notes.
void read_timeline_totals(const json& timeline, ProfileReport& report) {
  report.source = "cupti";
  report.program = string_or(timeline, "program");
  const json device = timeline.value("device", json::object());
  report.device_name = string_or(device, "name");
  report.sm_count = static_cast<int>(number_or(device, "sm_count", 0));
  const json cupti = timeline.value("cupti", json::object());
  report.cupti_available = cupti.is_object() && cupti.value("available", false);
  report.cupti_detail = string_or(cupti, "detail");
  const json forward = timeline.value("forward", json::object());
  const json totals = timeline.value("totals", json::object());
  report.forward_ns = number_or(totals, "forward_ns", number_or(forward, "wall_ns", 0));
  report.gpu_busy_ns = number_field(totals, "gpu_busy_ns");
  report.host_ns = number_field(forward, "host_ns");
  report.kernel_ns = number_or(totals, "kernel_ns", 0);
  report.copy_ns = number_or(totals, "copy_ns", 0);
  report.memset_ns = number_or(totals, "memset_ns", 0);
  report.leading_gap_ns = static_cast<int64_t>(number_or(totals, "leading_gap_ns", 0));
  report.trailing_gap_ns = static_cast<int64_t>(number_or(totals, "trailing_gap_ns", 0));
  report.largest_gap_ns = static_cast<int64_t>(number_or(totals, "largest_gap_ns", 0));
  report.gap_count = static_cast<int>(number_or(totals, "gap_count", 0));
  const json untraced = timeline.value("untraced", json::object());
  if (untraced.contains("event_ms") && untraced["event_ms"].is_array()) {
    std::vector<double> times;
    for (const json& t : untraced["event_ms"])
      if (t.is_number() && t.get<double>() >= 0) times.push_back(t.get<double>());
    if (!times.empty()) report.untraced_forward_ms = median(times);
  }
  report.api = timeline.value("api", json::object());
  read_notes(timeline, report);
}

ProfileActivity activity_from_json(const json& activity) {
  ProfileActivity entry;
  entry.type = string_or(activity, "type", "kernel");
  entry.name = string_or(activity, "name");
  entry.start_ns = static_cast<int64_t>(number_or(activity, "start_ns", 0));
  entry.end_ns = static_cast<int64_t>(number_or(activity, "end_ns", 0));
  entry.gap_before_ns = static_cast<int64_t>(number_or(activity, "gap_before_ns", 0));
  entry.bytes = static_cast<uint64_t>(number_or(activity, "bytes", 0));
  entry.stream_id = static_cast<uint32_t>(number_or(activity, "stream_id", 0));
  return entry;
}

// A kernel as its first launch describes it (launch configuration, resources).
ProfileKernel kernel_from_activity(const json& activity, const ProfileActivity& entry,
                                   const std::string& mangled) {
  ProfileKernel kernel;
  kernel.name = entry.name;
  kernel.mangled_name = mangled;
  kernel.grid = dims(activity, "grid");
  kernel.block = dims(activity, "block");
  kernel.registers_per_thread = static_cast<int>(number_or(activity, "registers_per_thread", 0));
  kernel.static_shared_bytes = static_cast<int64_t>(number_or(activity, "static_shared_bytes", 0));
  kernel.dynamic_shared_bytes =
      static_cast<int64_t>(number_or(activity, "dynamic_shared_bytes", 0));
  kernel.stream_id = entry.stream_id;
  return kernel;
}

// The timeline's activities (the first kMaxTimelineEntries kept), and per kernel its launches,
// total time and mean idle gap before it, slowest kernel first.
void read_activities(const json& timeline, ProfileReport& report) {
  std::map<std::string, size_t> kernel_index;  // mangled name → index in report.kernels
  std::vector<double> gap_sums;
  const json activities = timeline.value("activities", json::array());
  for (const json& activity : activities) {
    if (!activity.is_object()) continue;
    ProfileActivity entry = activity_from_json(activity);
    if (entry.type == "kernel") {
      std::string mangled = string_or(activity, "mangled_name", entry.name);
      auto [it, inserted] = kernel_index.emplace(mangled, report.kernels.size());
      if (inserted) {
        report.kernels.push_back(kernel_from_activity(activity, entry, mangled));
        gap_sums.push_back(0);
      }
      ProfileKernel& kernel = report.kernels[it->second];
      ++kernel.launches;
      kernel.total_ns += static_cast<double>(entry.end_ns - entry.start_ns);
      gap_sums[it->second] += static_cast<double>(entry.gap_before_ns);
    }
    if (report.timeline.size() < kMaxTimelineEntries) report.timeline.push_back(std::move(entry));
  }
  if (activities.size() > kMaxTimelineEntries)
    report.notes.push_back(fmt::format("timeline cut to the first {} of {} activities",
                                       kMaxTimelineEntries, activities.size()));
  for (size_t i = 0; i < report.kernels.size(); ++i)
    report.kernels[i].mean_gap_before_ns = gap_sums[i] / report.kernels[i].launches;
  std::stable_sort(
      report.kernels.begin(), report.kernels.end(),
      [](const ProfileKernel& a, const ProfileKernel& b) { return a.total_ns > b.total_ns; });
}

Result<ProfileReport> read_timeline(const json& timeline) {
  if (!timeline.is_object() || string_or(timeline, "format") != "stitchcuda.profile_timeline")
    return make_error("not a stitch-runner profile timeline");
  std::string status = string_or(timeline, "status", "ok");
  if (status != "ok")
    return make_error("stitch-runner profile: {}: {}", status, string_or(timeline, "message"));
  ProfileReport report;
  read_timeline_totals(timeline, report);
  read_activities(timeline, report);
  return report;
}

}  // namespace

Result<ProfileReport> report_from_timeline(const json& timeline) {
  return read_without_throwing("malformed profile timeline",
                               [&] { return read_timeline(timeline); });
}

void classify_report(ProfileReport& report, const BottleneckRules& rules) {
  double share = report.busy_share();
  std::vector<std::pair<Bottleneck, double>> kernel_time;
  for (ProfileKernel& kernel : report.kernels) {
    KernelTimelineFacts facts;
    facts.duration_ns = kernel.mean_ns();
    facts.gap_before_ns = kernel.mean_gap_before_ns;
    facts.forward_busy_share = share;
    facts.grid_blocks = kernel.grid_blocks();
    facts.sm_count = report.sm_count;
    Classification result = classify_kernel(kernel.counters, facts, rules);
    kernel.bottleneck = result.bottleneck;
    kernel.bottleneck_reason = result.reason;
    kernel.roofline.reset();
    if (kernel.counters && report.peaks)
      kernel.roofline = roofline_point(*kernel.counters, *report.peaks, kernel.mean_ns());
    kernel_time.emplace_back(kernel.bottleneck, kernel.total_ns);
  }
  Classification forward = classify_forward(share, kernel_time, rules);
  report.forward_bottleneck = forward.bottleneck;
  report.forward_bottleneck_reason = forward.reason;
}

namespace {

double ms(double ns) {
  return ns / 1e6;
}

json kernel_to_json(const ProfileKernel& k, double forward_ns) {
  json doc = {{"name", k.name},
              {"mangled_name", k.mangled_name},
              {"launches", k.launches},
              {"duration_ms", ms(k.total_ns)},
              {"mean_ms", ms(k.mean_ns())},
              {"share_pct", forward_ns > 0 ? 100 * k.total_ns / forward_ns : 0.0},
              {"mean_gap_before_ms", ms(k.mean_gap_before_ns)},
              {"grid", k.grid},
              {"block", k.block},
              {"registers_per_thread", k.registers_per_thread},
              {"static_shared_bytes", k.static_shared_bytes},
              {"dynamic_shared_bytes", k.dynamic_shared_bytes},
              {"stream_id", k.stream_id},
              {"bottleneck", enum_name(k.bottleneck)},
              {"bottleneck_reason", k.bottleneck_reason},
              {"counters", k.counters ? counters_to_json(*k.counters) : json(nullptr)},
              {"roofline", k.roofline ? roofline_to_json(*k.roofline) : json(nullptr)}};
  if (!k.counters) return doc;
  // Absent, not null, when not measured: readers use value(key, default), which throws on null.
  const KernelCounters& c = *k.counters;
  for (auto [key, value] :
       {std::pair{"dram_pct", c.dram_pct}, std::pair{"memory_pct", c.memory_pct},
        std::pair{"sm_pct", c.sm_pct}, std::pair{"occupancy_pct", c.occupancy_pct}})
    if (value) doc[key] = *value;
  return doc;
}

json activity_to_json(const ProfileActivity& a) {
  return {{"type", a.type},
          {"name", a.name},
          {"start_ns", a.start_ns},
          {"end_ns", a.end_ns},
          {"gap_before_ns", a.gap_before_ns},
          {"bytes", a.bytes},
          {"stream_id", a.stream_id}};
}

json peaks_to_json(const std::optional<GpuPeaks>& peaks) {
  if (!peaks) return nullptr;
  return {{"name", peaks->name},
          {"fp32_tflops", peaks->fp32_flops_per_s / 1e12},
          {"dram_tbps", peaks->dram_bytes_per_s / 1e12},
          {"ridge_flops_per_byte", peaks->ridge_flops_per_byte()},
          {"source", peaks->source}};
}

}  // namespace

json profile_to_json(const ProfileReport& report) {
  json kernels = json_array(report.kernels, [&](const ProfileKernel& kernel) {
    return kernel_to_json(kernel, report.forward_ns);
  });
  json timeline = json_array(report.timeline, activity_to_json);
  json peaks = peaks_to_json(report.peaks);
  double share = report.busy_share();
  return {
      {"format", "stitchcuda.profile"},
      {"version", 1},
      {"source", report.source},
      {"program", report.program},
      {"device", {{"name", report.device_name}, {"sm_count", report.sm_count}, {"peaks", peaks}}},
      {"forward_ms", ms(report.forward_ns)},
      {"gpu_busy_ms", report.gpu_busy_ns ? json(ms(*report.gpu_busy_ns)) : json(nullptr)},
      {"gpu_busy_share", share >= 0 ? json(share) : json(nullptr)},
      {"idle_ms",
       report.gpu_busy_ns ? json(ms(report.forward_ns - *report.gpu_busy_ns)) : json(nullptr)},
      {"kernel_ms", ms(report.kernel_ns)},
      {"copy_ms", ms(report.copy_ns)},
      {"memset_ms", ms(report.memset_ns)},
      {"untraced_forward_ms", optional_number(report.untraced_forward_ms)},
      {"host_ms", report.host_ns ? json(ms(*report.host_ns)) : json(nullptr)},
      {"gaps",
       {{"count", report.gap_count},
        {"largest_ms", ms(report.largest_gap_ns)},
        {"leading_ms", ms(report.leading_gap_ns)},
        {"trailing_ms", ms(report.trailing_gap_ns)}}},
      {"forward_bottleneck", enum_name(report.forward_bottleneck)},
      {"forward_bottleneck_reason", report.forward_bottleneck_reason},
      {"kernels", std::move(kernels)},
      {"timeline", std::move(timeline)},
      {"api", report.api},
      {"cupti", {{"available", report.cupti_available}, {"detail", report.cupti_detail}}},
      {"ncu",
       {{"attempted", report.ncu.attempted},
        {"path", report.ncu.path},
        {"detail", report.ncu.detail},
        {"metrics", report.ncu.metrics},
        {"profiled", report.ncu.profiled}}},
      {"nsys",
       {{"checked", report.nsys_checked},
        {"found", !report.nsys_path.empty()},
        {"path", report.nsys_path}}},
      {"notes", report.notes}};
}

namespace {

Result<ProfileReport> read_profile(const json& document) {
  if (!document.is_object()) return make_error("profile: not a JSON object");
  for (const char* key : {"source", "forward_ms", "kernels"})
    if (!document.contains(key)) return make_error("profile: missing \"{}\"", key);
  if (!document["kernels"].is_array()) return make_error("profile: kernels is not an array");
  if (!document["forward_ms"].is_number()) return make_error("profile: forward_ms not a number");
  ProfileReport report;
  report.source = string_or(document, "source");
  report.program = string_or(document, "program");
  const json device = document.value("device", json::object());
  report.device_name = string_or(device, "name");
  report.sm_count = static_cast<int>(number_or(device, "sm_count", 0));
  report.forward_ns = document["forward_ms"].get<double>() * 1e6;
  if (auto busy = number_field(document, "gpu_busy_ms")) report.gpu_busy_ns = *busy * 1e6;
  report.kernel_ns = number_or(document, "kernel_ms", 0) * 1e6;
  report.copy_ns = number_or(document, "copy_ms", 0) * 1e6;
  report.memset_ns = number_or(document, "memset_ms", 0) * 1e6;
  report.untraced_forward_ms = number_field(document, "untraced_forward_ms");
  if (auto host = number_field(document, "host_ms")) report.host_ns = *host * 1e6;
  const json gaps = document.value("gaps", json::object());
  report.gap_count = static_cast<int>(number_or(gaps, "count", 0));
  report.largest_gap_ns = static_cast<int64_t>(number_or(gaps, "largest_ms", 0) * 1e6);
  report.leading_gap_ns = static_cast<int64_t>(number_or(gaps, "leading_ms", 0) * 1e6);
  report.trailing_gap_ns = static_cast<int64_t>(number_or(gaps, "trailing_ms", 0) * 1e6);
  report.forward_bottleneck = enum_from_name<Bottleneck>(string_or(document, "forward_bottleneck"))
                                  .value_or(Bottleneck::unknown);
  report.forward_bottleneck_reason = string_or(document, "forward_bottleneck_reason");
  for (const json& k : document["kernels"]) {
    if (!k.is_object() || !k.contains("name") || !k["name"].is_string())
      return make_error("profile: a kernel without a name");
    ProfileKernel kernel;
    kernel.name = k["name"].get<std::string>();
    kernel.mangled_name = string_or(k, "mangled_name");
    kernel.launches = static_cast<int>(number_or(k, "launches", 1));
    kernel.total_ns = number_or(k, "duration_ms", 0) * 1e6;
    kernel.mean_gap_before_ns = number_or(k, "mean_gap_before_ms", 0) * 1e6;
    kernel.grid = dims(k, "grid");
    kernel.block = dims(k, "block");
    kernel.registers_per_thread = static_cast<int>(number_or(k, "registers_per_thread", 0));
    kernel.bottleneck =
        enum_from_name<Bottleneck>(string_or(k, "bottleneck")).value_or(Bottleneck::unknown);
    kernel.bottleneck_reason = string_or(k, "bottleneck_reason");
    KernelCounters counters;
    counters.dram_pct = number_field(k, "dram_pct");
    counters.memory_pct = number_field(k, "memory_pct");
    counters.sm_pct = number_field(k, "sm_pct");
    counters.occupancy_pct = number_field(k, "occupancy_pct");
    if (k.contains("counters") && k["counters"].is_object()) {
      const json& c = k["counters"];
      counters.duration_ns = number_field(c, "duration_ns");
      counters.dram_read_bytes = number_field(c, "dram_read_bytes");
      counters.dram_write_bytes = number_field(c, "dram_write_bytes");
      counters.flops = number_field(c, "flops");
      if (c.contains("metrics") && c["metrics"].is_object())
        for (const auto& [name, value] : c["metrics"].items())
          if (value.is_number()) counters.raw[name] = value.get<double>();
    }
    if (counters.dram_pct || counters.memory_pct || counters.sm_pct || counters.occupancy_pct ||
        !counters.raw.empty())
      kernel.counters = std::move(counters);
    report.kernels.push_back(std::move(kernel));
  }
  read_notes(document, report);
  const json cupti = document.value("cupti", json::object());
  report.cupti_available = cupti.is_object() && cupti.value("available", false);
  report.cupti_detail = string_or(cupti, "detail");
  const json ncu = document.value("ncu", json::object());
  if (ncu.is_object()) {
    report.ncu.attempted = ncu.value("attempted", false);
    report.ncu.path = string_or(ncu, "path");
    report.ncu.detail = string_or(ncu, "detail");
    report.ncu.profiled = static_cast<int>(number_or(ncu, "profiled", 0));
  }
  return report;
}

}  // namespace

Result<ProfileReport> profile_from_json(const json& document) {
  return read_without_throwing("malformed profile", [&] { return read_profile(document); });
}

std::string format_profile_table(const ProfileReport& report, size_t max_kernels) {
  std::string out;
  double share = report.busy_share();
  out += fmt::format("source {}{}{}\n", report.source,
                     report.device_name.empty() ? "" : ", device " + report.device_name,
                     report.program.empty() ? "" : ", " + report.program);
  out += fmt::format("forward {:.4f} ms", report.forward_ns / 1e6);
  if (report.untraced_forward_ms)
    out += fmt::format(" (untraced {:.4f} ms)", *report.untraced_forward_ms);
  if (report.host_ns) out += fmt::format(", host {:.4f} ms in the call", *report.host_ns / 1e6);
  if (report.gpu_busy_ns)
    out += fmt::format(", GPU busy {:.4f} ms ({:.0f}%), idle {:.4f} ms in {} gaps",
                       *report.gpu_busy_ns / 1e6, 100 * share,
                       (report.forward_ns - *report.gpu_busy_ns) / 1e6, report.gap_count);
  out += fmt::format("\nbottleneck: {}{}\n\n", enum_name(report.forward_bottleneck),
                     report.forward_bottleneck_reason.empty()
                         ? ""
                         : " (" + report.forward_bottleneck_reason + ")");
  out += fmt::format("{:<44} {:>5} {:>10} {:>6} {:>6} {:>6} {:>6}  {}\n", "kernel", "calls",
                     "time ms", "% fwd", "DRAM%", "SM%", "occ%", "bottleneck");
  for (size_t i = 0; i < report.kernels.size() && i < max_kernels; ++i) {
    const ProfileKernel& k = report.kernels[i];
    std::string name = short_name(k.name);
    if (name.size() > 44) name = name.substr(0, 41) + "...";
    std::optional<double> dram, sm, occupancy;
    if (k.counters) {
      dram = k.counters->dram_pct ? k.counters->dram_pct : k.counters->memory_pct;
      sm = k.counters->sm_pct;
      occupancy = k.counters->occupancy_pct;
    }
    out += fmt::format("{:<44} {:>5} {:>10.4f} {:>6.1f} {:>6} {:>6} {:>6}  {}\n", name, k.launches,
                       k.total_ns / 1e6,
                       report.forward_ns > 0 ? 100 * k.total_ns / report.forward_ns : 0.0,
                       cell_pct(dram), cell_pct(sm), cell_pct(occupancy), enum_name(k.bottleneck));
  }
  if (report.kernels.size() > max_kernels)
    out += fmt::format("... {} more kernels\n", report.kernels.size() - max_kernels);
  for (const std::string& note : report.notes)
    out += "note: " + note + "\n";
  return out;
}

}  // namespace stitch
