// Two benches compared: outcome changes, the time ratio with both spreads, and regressions only
// beyond the spread (passed → not passed; new p10 above old p90), never for overlapping spreads.
#include "bench/bench_compare.h"

#include <gtest/gtest.h>

#include "sample_records.h"

namespace stitch::bench {
namespace {

using testing::make_record;

BenchRecord timed(std::string task, double median, double p10, double p90) {
  BenchRecord record = make_record(std::move(task), "level2", BenchOutcome::passed, median, {});
  record.ours_p10_ms = p10;
  record.ours_p90_ms = p90;
  return record;
}

const TaskChange& change_of(const BenchComparison& comparison, const std::string& key) {
  for (const auto& task : comparison.tasks)
    if (task.key == key) return task;
  ADD_FAILURE() << "no change for " << key;
  static TaskChange none;
  return none;
}

TEST(BenchCompare, OverlappingSpreadsAreNoRegression) {
  auto comparison = compare_benches({timed("A", 1.0, 0.9, 1.1)}, {timed("A", 1.05, 0.95, 1.2)});
  ASSERT_EQ(comparison.tasks.size(), 1u);
  const TaskChange& a = comparison.tasks[0];
  EXPECT_EQ(a.key, "level2/A");
  ASSERT_TRUE(a.ratio);
  EXPECT_DOUBLE_EQ(*a.ratio, 1.05);
  EXPECT_EQ(a.regression, Regression::none);
  EXPECT_FALSE(a.outcome_changed());
  EXPECT_EQ(comparison.regressions(), 0);
}

TEST(BenchCompare, NewP10AboveOldP90IsSlower) {
  auto comparison = compare_benches({timed("A", 1.0, 0.9, 1.1)}, {timed("A", 1.3, 1.15, 1.4)});
  EXPECT_EQ(comparison.tasks[0].regression, Regression::slower);
  EXPECT_DOUBLE_EQ(*comparison.tasks[0].ratio, 1.3);
  EXPECT_EQ(comparison.regressions(), 1);
  // Faster beyond the spread is an improvement, not a regression.
  auto faster = compare_benches({timed("A", 1.3, 1.15, 1.4)}, {timed("A", 1.0, 0.9, 1.1)});
  EXPECT_EQ(faster.regressions(), 0);
}

// A run's spread is narrower than the drift between runs: beyond the spread but within the
// tolerance (1.5% < 2%) is no regression; the same change with no tolerance is.
TEST(BenchCompare, ASlowDownWithinTheToleranceIsNoRegression) {
  const BenchRecord old_record = timed("A", 1.0, 0.999, 1.001);
  const BenchRecord new_record = timed("A", 1.015, 1.014, 1.016);
  EXPECT_EQ(compare_benches({old_record}, {new_record}).regressions(), 0);
  EXPECT_EQ(compare_benches({old_record}, {new_record}, 0.0).regressions(), 1);
  EXPECT_EQ(compare_benches({old_record}, {timed("A", 1.03, 1.02, 1.04)}).regressions(), 1);
}

TEST(BenchCompare, PassedToNotPassedIsARegressionAndTheReverseIsNot) {
  BenchRecord wrong = make_record("A", "level2", BenchOutcome::wrong, std::nullopt, {});
  auto lost = compare_benches({timed("A", 1.0, 0.9, 1.1)}, {wrong});
  const TaskChange& a = lost.tasks[0];
  EXPECT_TRUE(a.outcome_changed());
  EXPECT_EQ(*a.old_outcome, BenchOutcome::passed);
  EXPECT_EQ(*a.new_outcome, BenchOutcome::wrong);
  EXPECT_EQ(a.regression, Regression::no_longer_passes);
  EXPECT_FALSE(a.ratio);
  auto gained = compare_benches({wrong}, {timed("A", 1.0, 0.9, 1.1)});
  EXPECT_TRUE(gained.tasks[0].outcome_changed());
  EXPECT_EQ(gained.regressions(), 0);
}

TEST(BenchCompare, TasksInOneBenchOnlyAreListedAndNotRegressions) {
  auto comparison = compare_benches({timed("A", 1.0, 0.9, 1.1), timed("B", 2.0, 1.9, 2.1)},
                                    {timed("B", 2.0, 1.9, 2.1), timed("C", 1.0, 0.9, 1.1)});
  ASSERT_EQ(comparison.tasks.size(), 3u);
  EXPECT_EQ(comparison.tasks[0].key, "level2/A");  // the old bench's order, then the new ones
  EXPECT_EQ(comparison.tasks[2].key, "level2/C");
  EXPECT_FALSE(change_of(comparison, "level2/A").new_outcome);
  EXPECT_FALSE(change_of(comparison, "level2/C").old_outcome);
  EXPECT_EQ(comparison.regressions(), 0);
}

TEST(BenchCompare, AMissingSpreadFlagsNoTimeRegression) {
  BenchRecord old_record = make_record("A", "level2", BenchOutcome::passed, 1.0, {});  // no p10/p90
  auto comparison = compare_benches({old_record}, {timed("A", 5.0, 4.9, 5.1)});
  EXPECT_DOUBLE_EQ(*comparison.tasks[0].ratio, 5.0);
  EXPECT_EQ(comparison.regressions(), 0);
}

}  // namespace
}  // namespace stitch::bench
