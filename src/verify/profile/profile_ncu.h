// Nsight Compute (ncu) for the top kernels of a profile: which metrics are asked for, the command
// line (one ncu run per kernel, --launch-count 1, --clock-control none because clocks are left to
// the machine), parsing of ncu's CSV, and what went wrong when it did (counters not permitted,
// profiler library missing, a metric this ncu does not know).
//
// CSV formats read (ncu --csv; columns are found by header name, so their order and any extra
// columns do not matter; lines ncu prefixes with "==" are skipped):
//   details page (the default): one row per metric,
//     "ID","Process ID","Process Name","Host Name","Kernel Name",...,"Section Name",
//     "Metric Name","Metric Unit","Metric Value"
//   raw page (--page raw): one row per kernel, one column per metric, and a row of units after the
//     header (its ID cell empty).
// Values may carry thousands separators ("1,048,576") and units with SI prefixes ("Kbyte",
// "usecond"); they are returned in base units (bytes, ns). "n/a" is no value.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/process.h"
#include "util/result.h"
#include "verify/profile/profile_rules.h"

namespace stitch {

struct NcuKernelResult {
  std::string id;
  std::string kernel_name;
  std::map<std::string, double> metrics;           // base units
  std::map<std::string, std::string> text_values;  // values that are not numbers ("n/a", ...)
};

// The CSV split into rows of cells (RFC 4180 quoting: "" inside quotes, commas and newlines in
// quoted cells).
std::vector<std::vector<std::string>> parse_csv(std::string_view text);

// Kernels in the order ncu listed them. An Error when no header row is found.
Result<std::vector<NcuKernelResult>> parse_ncu_csv(std::string_view text);

// A value in base units; nullopt for "n/a", empty or unparseable text.
std::optional<double> parse_ncu_value(std::string_view value, std::string_view unit);

KernelCounters counters_from_ncu(const NcuKernelResult& result);

// Metric sets from the most to the least demanding; a run that names a metric this ncu or GPU
// does not know fails as a whole, so the next set is tried.
const std::vector<std::vector<std::string>>& ncu_metric_tiers();

enum class NcuProblem : uint8_t {
  none,
  not_permitted,         // ERR_NVGPUCTRPERM: counters restricted to admin users
  profiler_unavailable,  // "LibraryNotLoaded", "Failed to initialize the profiler", unsupported GPU
  unknown_metric,        // a metric name this ncu or GPU does not know
  unknown_option,        // an ncu too old for a flag
  no_kernel_profiled,    // the name filter matched nothing
  timed_out,
  failed,  // anything else
};
std::string_view ncu_problem_name(NcuProblem problem);

// Reads ncu's messages (stdout, stderr, the log file) and how many kernels were parsed.
NcuProblem classify_ncu_run(const ProcessResult& process, std::string_view log_text,
                            size_t kernels_parsed);

struct NcuRequest {
  std::filesystem::path ncu;
  std::string mangled_kernel_name;
  std::vector<std::string> metrics;
  std::filesystem::path log_file;
  std::vector<std::string> target_argv;  // the program ncu starts (stitch-runner ...)
  // Leave out --page and --print-units (their defaults are what the parser reads anyway): the
  // retry for an ncu that does not know them.
  bool plain_output_flags = false;
};

// ncu --csv --page details --print-units base --log-file LOG --clock-control none
//     --target-processes all --kernel-name-base mangled --kernel-name regex:^NAME$
//     --launch-count 1 --metrics A,B,... TARGET...
std::vector<std::string> ncu_argv(const NcuRequest& request);

// "regex:^name$" with the regex metacharacters of the name escaped.
std::string ncu_kernel_filter(std::string_view mangled_name);

// $STITCH_NCU, ncu on PATH, /usr/local/cuda/bin/ncu, the newest /opt/nvidia/nsight-compute/*/ncu.
std::optional<std::filesystem::path> locate_ncu();

}  // namespace stitch
