#include "verify/timing_basis.h"

#include <vector>

#include <gtest/gtest.h>

namespace stitch {
namespace {

TEST(TimingBasis, StreamTimeWhenTheGapIsOnlyTheSynchronizeCost) {
  std::vector<double> stream{0.100, 0.101, 0.099}, synced{0.113, 0.115, 0.112};
  std::vector<double> empty{0.013, 0.014, 0.012};
  TimingBasisDecision decision = choose_timing_basis(stream, synced, empty);
  EXPECT_EQ(decision.basis, TimingBasis::stream) << decision.detail;
  EXPECT_NEAR(decision.excess_gap_ms, 0.0, 1e-9);
}

TEST(TimingBasis, SyncedTimeWhenWorkOutlivesTheCallersStream) {
  std::vector<double> stream{0.100, 0.101, 0.099}, synced{0.300, 0.310, 0.305};
  std::vector<double> empty{0.013, 0.014, 0.012};
  TimingBasisDecision decision = choose_timing_basis(stream, synced, empty);
  EXPECT_EQ(decision.basis, TimingBasis::synced);
  EXPECT_GT(decision.excess_gap_ms, 0.18);
  EXPECT_NE(decision.detail.find("outside the caller's stream"), std::string::npos);
}

TEST(TimingBasis, ThresholdIsTheLargerOfTenMicrosecondsAndTenPercent) {
  std::vector<double> empty{0.013};
  EXPECT_EQ(choose_timing_basis(std::vector{1.0}, std::vector{1.103}, empty).basis,
            TimingBasis::stream);
  EXPECT_EQ(choose_timing_basis(std::vector{1.0}, std::vector{1.123}, empty).basis,
            TimingBasis::synced);
  // Tiny forwards: the 10 us floor applies.
  EXPECT_EQ(choose_timing_basis(std::vector{0.010}, std::vector{0.031}, empty).basis,
            TimingBasis::stream);
  EXPECT_EQ(choose_timing_basis(std::vector{0.010}, std::vector{0.035}, empty).basis,
            TimingBasis::synced);
}

TEST(TimingBasis, MissingOrUnpairedSamplesFallBackToTheSyncedTime) {
  std::vector<double> one{0.1}, two{0.1, 0.2}, none;
  EXPECT_EQ(choose_timing_basis(one, one, none).basis, TimingBasis::synced);
  EXPECT_EQ(choose_timing_basis(two, one, one).basis, TimingBasis::synced);
  EXPECT_EQ(choose_timing_basis(none, none, one).basis, TimingBasis::synced);
}

}  // namespace
}  // namespace stitch
