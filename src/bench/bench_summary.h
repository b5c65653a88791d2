// Aggregation of bench records (per level and over all tasks) and the tables that show them:
// markdown for files and pull requests, aligned plain text for terminals. Pure functions of the
// records. The number formatters here are the only ones the tables and the HTML report use, so
// every number a report prints is one of the records' numbers written one way.
//
// fast_p follows KernelBench: the fraction of ALL tasks of a level that are correct AND faster
// than p times the baseline (speedup > p, strictly); fast_0 is the fraction that are correct.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_results.h"

namespace stitch::bench {

inline constexpr std::array<double, 4> kFastPThresholds = {0.0, 1.0, 1.5, 2.0};

struct ModeSummary {
  std::string mode;
  int tasks_with_baseline = 0;  // tasks of the level (any outcome) with this baseline measured
  std::array<double, kFastPThresholds.size()> fast_p{};  // one per kFastPThresholds entry
  std::optional<double> geomean_speedup;                 // over passed tasks having this baseline
  int geomean_count = 0;                                 // how many tasks the geomean is over
};

struct LevelSummary {
  std::string level;  // kAllLevels for the row over every task
  int tasks = 0;
  int passed = 0;
  std::vector<ModeSummary> modes;  // in baseline_modes() order, the same for every row

  double correct_fraction() const { return tasks > 0 ? static_cast<double>(passed) / tasks : 0; }
};

inline constexpr const char* kAllLevels = "all";

// The baseline modes present in any record: eager, compile, reduce-overhead, then others
// alphabetically.
std::vector<std::string> baseline_modes(const std::vector<BenchRecord>& records);

// The modes the per-task tables give columns to: eager, compile, reduce-overhead always (so
// tables from different benches line up), then any other present, alphabetically.
std::vector<std::string> table_modes(const std::vector<BenchRecord>& records);

// One row per level (natural order: level2 before level10), then the "all" row.
std::vector<LevelSummary> summarize_levels(const std::vector<BenchRecord>& records);

// Distinct non-empty tracks / GPUs, in first-appearance order.
std::vector<std::string> tracks_present(const std::vector<BenchRecord>& records);
std::vector<std::string> gpus_present(const std::vector<BenchRecord>& records);

// "—" for a missing (or non-finite) number.
inline constexpr const char* kMissing = "—";
std::string format_ms(std::optional<double> ms);            // "1.234"
std::string format_speedup(std::optional<double> speedup);  // "1.23×"
std::string format_percent(double fraction);                // "75.0%"
std::string format_percent(std::optional<double> fraction); // "75.0%", or the missing mark
std::string format_seconds(double seconds);                 // "12.3"

// Header (tracks, GPUs, counts), the per-task table (task, level, outcome, ours ms, each
// baseline's ms, speedup against each, attempts; the modes are eager, compile and
// reduce-overhead, plus any other present), the per-level summary and the failures' reasons.
std::string format_table_markdown(const std::vector<BenchRecord>& records);

// The same for a terminal: fewer columns (ours ms, speedups, attempts), aligned with spaces.
std::string format_table_text(const std::vector<BenchRecord>& records);

}  // namespace stitch::bench
