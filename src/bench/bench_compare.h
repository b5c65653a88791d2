// Two benches of the same tasks compared task by task (`stitchcuda bench --compare OLD NEW`): the
// outcome each gave, the time ratio new/old with both runs' spreads (p10–p90), and the
// regressions — a task that passed and no longer does, or whose new p10 is above its old p90
// (slower in every sense the spread allows) by more than a tolerance: one run's spread is narrower
// than the drift between runs (docs/bench-history/2026-12-01-h200-ab-5f58b48-vs-2613adb: the same
// build moved up to 0.7% on one H200 lease, 1.6% across leases). The long-term regression check.
// Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_results.h"

namespace stitch::bench {

enum class Regression : uint8_t {
  none,
  no_longer_passes,  // passed before, not now
  slower,            // both passed; new p10 above old p90, median up by more than the tolerance
};

// The least relative slow-down of the median counted as a regression (`--tolerance`, percent).
inline constexpr double kDefaultCompareTolerance = 0.02;

struct TimeSpread {
  double median_ms = 0;
  std::optional<double> p10_ms, p90_ms;
};

struct TaskChange {
  std::string key;  // level/task
  std::optional<BenchOutcome> old_outcome, new_outcome;  // nullopt: not in that bench
  std::optional<TimeSpread> old_time, new_time;          // set for passed records with a time
  std::optional<double> ratio;                           // new median / old median
  Regression regression = Regression::none;

  bool outcome_changed() const { return old_outcome != new_outcome; }
};

struct BenchComparison {
  std::vector<TaskChange> tasks;  // the old bench's order, then tasks only the new one has
  int regressions() const;
};

BenchComparison compare_benches(const std::vector<BenchRecord>& old_records,
                                const std::vector<BenchRecord>& new_records,
                                double tolerance = kDefaultCompareTolerance);

}  // namespace stitch::bench
