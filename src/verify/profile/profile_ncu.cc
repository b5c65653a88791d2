// ncu command line, CSV parsing and failure classification; see profile_ncu.h.
#include "verify/profile/profile_ncu.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <fmt/format.h>

#include "util/enum_names.h"
#include "util/text.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

int column_of(const std::vector<std::string>& header, std::string_view name) {
  for (size_t i = 0; i < header.size(); ++i)
    if (trim(header[i]) == name) return static_cast<int>(i);
  return -1;
}

std::string cell(const std::vector<std::string>& row, int column) {
  if (column < 0 || static_cast<size_t>(column) >= row.size()) return "";
  return std::string(trim(row[column]));
}

// A metric column of the raw page: ncu's names hold "__" (dram__bytes_read.sum).
bool looks_like_metric(std::string_view name) {
  return name.find("__") != std::string_view::npos;
}

void add_value(NcuKernelResult& result, const std::string& metric, const std::string& value,
               const std::string& unit) {
  if (metric.empty()) return;
  if (std::optional<double> number = parse_ncu_value(value, unit))
    result.metrics[metric] = *number;
  else
    result.text_values[metric] = value;
}

std::vector<NcuKernelResult> parse_details(const std::vector<std::vector<std::string>>& rows,
                                           size_t header_index) {
  const auto& header = rows[header_index];
  int id = column_of(header, "ID"), kernel = column_of(header, "Kernel Name");
  int metric = column_of(header, "Metric Name"), unit = column_of(header, "Metric Unit");
  int value = column_of(header, "Metric Value");
  std::vector<NcuKernelResult> kernels;  // in order of first appearance
  std::map<std::string, size_t> index_of;
  for (size_t r = header_index + 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (static_cast<int>(row.size()) <= std::max(metric, value)) continue;
    if (cell(row, metric) == "Metric Name") continue;  // a repeated header
    std::string row_id = cell(row, id);
    auto [it, inserted] = index_of.emplace(row_id, kernels.size());
    if (inserted) kernels.push_back({row_id, cell(row, kernel), {}, {}});
    add_value(kernels[it->second], cell(row, metric), cell(row, value), cell(row, unit));
  }
  return kernels;
}

std::vector<NcuKernelResult> parse_raw(const std::vector<std::vector<std::string>>& rows,
                                       size_t header_index) {
  const auto& header = rows[header_index];
  int id = column_of(header, "ID"), kernel = column_of(header, "Kernel Name");
  std::vector<std::string> units(header.size());
  size_t r = header_index + 1;
  if (r < rows.size() && cell(rows[r], id).empty()) {  // the units row
    for (size_t c = 0; c < header.size() && c < rows[r].size(); ++c)
      units[c] = std::string(trim(rows[r][c]));
    ++r;
  }
  std::vector<NcuKernelResult> kernels;
  for (; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (cell(row, id).empty() || cell(row, id) == "ID") continue;
    NcuKernelResult result{cell(row, id), cell(row, kernel), {}, {}};
    for (size_t c = 0; c < header.size() && c < row.size(); ++c) {
      std::string name(trim(header[c]));
      if (looks_like_metric(name)) add_value(result, name, std::string(trim(row[c])), units[c]);
    }
    kernels.push_back(std::move(result));
  }
  return kernels;
}

bool contains_any(std::string_view haystack, std::initializer_list<std::string_view> needles) {
  for (std::string_view needle : needles)
    if (haystack.find(needle) != std::string_view::npos) return true;
  return false;
}

std::optional<double> sum_if_any(const std::map<std::string, double>& metrics,
                                 std::initializer_list<std::pair<const char*, double>> terms) {
  bool any = false;
  double total = 0;
  for (auto [name, weight] : terms) {
    auto it = metrics.find(name);
    if (it == metrics.end()) continue;
    any = true;
    total += weight * it->second;
  }
  return any ? std::optional<double>(total) : std::nullopt;
}

}  // namespace

std::vector<std::vector<std::string>> parse_csv(std::string_view text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, field_started = false;
  auto end_field = [&] {
    row.push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  auto end_row = [&] {
    if (field_started || !row.empty()) end_field();
    if (!row.empty()) rows.push_back(std::move(row));
    row.clear();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        field += c;
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      field_started = true;
    } else if (c == ',') {
      end_field();
    } else if (c == '\n') {
      end_row();
    } else if (c != '\r') {
      field += c;
      field_started = true;
    }
  }
  end_row();
  return rows;
}

Result<std::vector<NcuKernelResult>> parse_ncu_csv(std::string_view text) {
  // ncu's own messages ("==PROF== Connected to process", "==WARNING== ...") share the log.
  std::string csv;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (!trim(line).starts_with("==")) {
      csv.append(line);
      csv += '\n';
    }
    pos = end + 1;
  }
  std::vector<std::vector<std::string>> rows = parse_csv(csv);
  for (size_t r = 0; r < rows.size(); ++r) {
    const auto& header = rows[r];
    if (column_of(header, "Kernel Name") < 0 || column_of(header, "ID") < 0) continue;
    if (column_of(header, "Metric Name") >= 0 && column_of(header, "Metric Value") >= 0)
      return parse_details(rows, r);
    return parse_raw(rows, r);
  }
  return make_error("no ncu CSV header (a row with \"ID\" and \"Kernel Name\") in {} bytes",
                    text.size());
}

std::optional<double> parse_ncu_value(std::string_view value, std::string_view unit) {
  value = trim(value);
  std::string digits;
  for (char c : value)
    if (c != ',') digits += c;
  if (digits.empty() || lower(digits) == "n/a") return std::nullopt;
  double number = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;

  unit = trim(unit);
  std::string_view numerator = unit.substr(0, unit.find('/'));
  bool rate = numerator.size() != unit.size();
  if (!rate) {  // durations to ns
    static constexpr std::array<std::pair<std::string_view, double>, 8> kTime = {{{"nsecond", 1},
                                                                                  {"ns", 1},
                                                                                  {"usecond", 1e3},
                                                                                  {"us", 1e3},
                                                                                  {"msecond", 1e6},
                                                                                  {"ms", 1e6},
                                                                                  {"second", 1e9},
                                                                                  {"s", 1e9}}};
    for (auto [name, scale] : kTime)
      if (numerator == name) return number * scale;
  }
  // SI prefixes on counted things: Kbyte, Mbyte, Ginst, Kcycle, ...
  if (numerator.size() > 1 && std::islower(static_cast<unsigned char>(numerator[1]))) {
    switch (numerator[0]) {
      case 'K':
        return number * 1e3;
      case 'M':
        return number * 1e6;
      case 'G':
        return number * 1e9;
      case 'T':
        return number * 1e12;
      default:
        break;
    }
  }
  return number;
}

KernelCounters counters_from_ncu(const NcuKernelResult& result) {
  const auto& m = result.metrics;
  auto get = [&](const char* name) -> std::optional<double> {
    auto it = m.find(name);
    return it == m.end() ? std::nullopt : std::optional<double>(it->second);
  };
  KernelCounters counters;
  counters.raw = m;
  counters.duration_ns = get("gpu__time_duration.sum");
  counters.sm_pct = get("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  counters.memory_pct = get("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
  counters.dram_pct = get("dram__throughput.avg.pct_of_peak_sustained_elapsed");
  counters.occupancy_pct = get("sm__warps_active.avg.pct_of_peak_sustained_active");
  counters.theoretical_occupancy_pct = get("sm__maximum_warps_per_active_cycle_pct");
  counters.dram_read_bytes = get("dram__bytes_read.sum");
  counters.dram_write_bytes = get("dram__bytes_write.sum");
  counters.tensor_pipe_pct =
      get("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active");
  counters.grid_blocks = get("launch__grid_size");
  counters.block_threads = get("launch__block_size");
  counters.registers_per_thread = get("launch__registers_per_thread");
  // Thread-level SASS instructions: an FMA is two floating-point operations.
  std::optional<double> fp32 =
      sum_if_any(m, {{"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", 1},
                     {"sm__sass_thread_inst_executed_op_fmul_pred_on.sum", 1},
                     {"sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 2}});
  std::optional<double> other =
      sum_if_any(m, {{"sm__sass_thread_inst_executed_op_dadd_pred_on.sum", 1},
                     {"sm__sass_thread_inst_executed_op_dmul_pred_on.sum", 1},
                     {"sm__sass_thread_inst_executed_op_dfma_pred_on.sum", 2},
                     {"sm__sass_thread_inst_executed_op_hadd_pred_on.sum", 1},
                     {"sm__sass_thread_inst_executed_op_hmul_pred_on.sum", 1},
                     {"sm__sass_thread_inst_executed_op_hfma_pred_on.sum", 2}});
  if (fp32 || other) counters.flops = fp32.value_or(0) + other.value_or(0);
  return counters;
}

const std::vector<std::vector<std::string>>& ncu_metric_tiers() {
  static const std::vector<std::vector<std::string>> tiers = [] {
    std::vector<std::string> minimal = {
        "gpu__time_duration.sum",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
    };
    std::vector<std::string> core = minimal;
    for (const char* name :
         {"launch__grid_size", "launch__block_size", "launch__registers_per_thread",
          "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
          "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
          "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"})
      core.push_back(name);
    std::vector<std::string> full = core;
    for (const char* name :
         {"sm__maximum_warps_per_active_cycle_pct",
          "sm__sass_thread_inst_executed_op_dadd_pred_on.sum",
          "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
          "sm__sass_thread_inst_executed_op_dfma_pred_on.sum",
          "sm__sass_thread_inst_executed_op_hadd_pred_on.sum",
          "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
          "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
          "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"})
      full.push_back(name);
    return std::vector<std::vector<std::string>>{full, core, minimal};
  }();
  return tiers;
}

std::string_view ncu_problem_name(NcuProblem problem) {
  static constexpr std::array<std::string_view, 8> kNames = {
      "none",           "not_permitted",      "profiler_unavailable", "unknown_metric",
      "unknown_option", "no_kernel_profiled", "timed_out",            "failed"};
  static_assert(kNames.size() == static_cast<size_t>(NcuProblem::failed) + 1);
  return enum_name(kNames, problem, "failed");
}

NcuProblem classify_ncu_run(const ProcessResult& process, std::string_view log_text,
                            size_t kernels_parsed) {
  if (process.timed_out) return NcuProblem::timed_out;
  std::string all = process.stdout_text + "\n" + process.stderr_text + "\n" + std::string(log_text);
  std::string text = lower(all);
  if (all.find("ERR_NVGPUCTRPERM") != std::string::npos) return NcuProblem::not_permitted;
  if (kernels_parsed > 0) return NcuProblem::none;
  if (contains_any(text, {"librarynotloaded", "failed to initialize the profiler",
                          "profiling is not supported", "device not supported", "unsupported gpu"}))
    return NcuProblem::profiler_unavailable;
  if (contains_any(text, {"failed to find metric", "metric not found", "unknown metric",
                          "invalid metric", "not a valid metric"}))
    return NcuProblem::unknown_metric;
  if (contains_any(text, {"unrecognised option", "unrecognized option", "unknown option"}))
    return NcuProblem::unknown_option;
  if (contains_any(text, {"no kernels were profiled"}) || process.succeeded())
    return NcuProblem::no_kernel_profiled;
  return NcuProblem::failed;
}

std::string ncu_kernel_filter(std::string_view mangled_name) {
  std::string escaped = "regex:^";
  for (char c : mangled_name) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) escaped += '\\';
    escaped += c;
  }
  escaped += '$';
  return escaped;
}

std::vector<std::string> ncu_argv(const NcuRequest& request) {
  std::string metrics;
  for (const std::string& metric : request.metrics)
    metrics += (metrics.empty() ? "" : ",") + metric;
  std::vector<std::string> argv = {request.ncu.string(), "--csv"};
  if (!request.plain_output_flags)
    argv.insert(argv.end(), {"--page", "details", "--print-units", "base"});
  argv.insert(argv.end(), {"--log-file", request.log_file.string(), "--clock-control", "none",
                           "--target-processes", "all", "--kernel-name-base", "mangled",
                           "--kernel-name", ncu_kernel_filter(request.mangled_kernel_name),
                           "--launch-count", "1", "--metrics", metrics});
  argv.insert(argv.end(), request.target_argv.begin(), request.target_argv.end());
  return argv;
}

std::optional<fs::path> locate_ncu() {
  if (const char* explicit_path = std::getenv("STITCH_NCU"); explicit_path && *explicit_path)
    return fs::path(explicit_path);
  if (std::string found = find_in_path("ncu"); !found.empty()) return fs::path(found);
  std::error_code error;
  if (fs::exists("/usr/local/cuda/bin/ncu", error)) return fs::path("/usr/local/cuda/bin/ncu");
  std::vector<fs::path> installed;
  for (const auto& entry : fs::directory_iterator("/opt/nvidia/nsight-compute", error))
    if (fs::exists(entry.path() / "ncu", error)) installed.push_back(entry.path() / "ncu");
  if (installed.empty()) return std::nullopt;
  std::sort(installed.begin(), installed.end());  // version directories: "2025.3.1"
  return installed.back();
}

}  // namespace stitch
