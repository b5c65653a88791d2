// Two benches compared task by task (bench_compare.h).
#include "bench/bench_compare.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace stitch::bench {
namespace {

bool finite_positive(std::optional<double> value) {
  return value && std::isfinite(*value) && *value > 0;
}

std::optional<TimeSpread> time_of(const BenchRecord& record) {
  if (!record.passed() || !finite_positive(record.ours_ms)) return std::nullopt;
  return TimeSpread{*record.ours_ms, record.ours_p10_ms, record.ours_p90_ms};
}

Regression regression_of(const TaskChange& change, double tolerance) {
  if (change.old_outcome == BenchOutcome::passed && change.new_outcome &&
      *change.new_outcome != BenchOutcome::passed)
    return Regression::no_longer_passes;
  if (change.old_time && change.new_time && change.old_time->p90_ms && change.new_time->p10_ms &&
      *change.new_time->p10_ms > *change.old_time->p90_ms && change.ratio &&
      *change.ratio > 1 + tolerance)
    return Regression::slower;
  return Regression::none;
}

}  // namespace

int BenchComparison::regressions() const {
  return static_cast<int>(std::count_if(tasks.begin(), tasks.end(), [](const TaskChange& task) {
    return task.regression != Regression::none;
  }));
}

BenchComparison compare_benches(const std::vector<BenchRecord>& old_records,
                                const std::vector<BenchRecord>& new_records, double tolerance) {
  std::map<std::string, const BenchRecord*> by_key;
  for (const auto& record : new_records)
    by_key[record.key()] = &record;
  BenchComparison comparison;
  auto add = [&](const BenchRecord* old_record, const BenchRecord* new_record) {
    TaskChange change;
    change.key = old_record ? old_record->key() : new_record->key();
    if (old_record) {
      change.old_outcome = old_record->outcome;
      change.old_time = time_of(*old_record);
    }
    if (new_record) {
      change.new_outcome = new_record->outcome;
      change.new_time = time_of(*new_record);
    }
    if (change.old_time && change.new_time)
      change.ratio = change.new_time->median_ms / change.old_time->median_ms;
    change.regression = regression_of(change, tolerance);
    comparison.tasks.push_back(std::move(change));
  };
  std::map<std::string, bool> seen;
  for (const auto& old_record : old_records) {
    auto found = by_key.find(old_record.key());
    add(&old_record, found == by_key.end() ? nullptr : found->second);
    seen[old_record.key()] = true;
  }
  for (const auto& new_record : new_records)
    if (!seen.count(new_record.key())) add(nullptr, &new_record);
  return comparison;
}

}  // namespace stitch::bench
