// What a finished loop says of a bench task (app/bench_task.h's bench_outcome): every ending of the
// loop maps onto the bench outcome of its name, a failed loop onto its last verdict.
#include "app/bench_task.h"

#include <gtest/gtest.h>

namespace stitch::app {
namespace {

using agents::RunEnd;
using bench::BenchOutcome;

agents::RunState ended(RunEnd end) {
  agents::RunState state;
  state.end = end;
  return state;
}

agents::AttemptRecord verified(std::optional<Outcome> outcome) {
  agents::AttemptRecord attempt;
  attempt.result = agents::AttemptResult{};
  attempt.result->outcome = outcome;
  if (!outcome) attempt.result->state = VerifyState::no_gpu;
  return attempt;
}

TEST(BenchOutcome, EveryEndingOfTheLoop) {
  EXPECT_EQ(bench_outcome(ended(RunEnd::succeeded)), BenchOutcome::passed);
  EXPECT_EQ(bench_outcome(ended(RunEnd::refused)), BenchOutcome::refused);
  EXPECT_EQ(bench_outcome(ended(RunEnd::no_gpu)), BenchOutcome::no_gpu);
  EXPECT_EQ(bench_outcome(ended(RunEnd::budget_exhausted)), BenchOutcome::budget_exhausted);
  EXPECT_EQ(bench_outcome(ended(RunEnd::infrastructure_error)), BenchOutcome::infrastructure_error);
  // No verification reached a verdict: the built-in roles produced no program.
  EXPECT_EQ(bench_outcome(ended(RunEnd::failed)), BenchOutcome::refused);
}

TEST(BenchOutcome, AFailedLoopIsItsLastVerdict) {
  agents::RunState state = ended(RunEnd::failed);
  state.attempts = {verified(Outcome::compile_error), verified(Outcome::wrong),
                    verified(std::nullopt)};
  EXPECT_EQ(bench_outcome(state), BenchOutcome::wrong);
  state.end = RunEnd::none;  // not finished (an interrupted bench): the same
  EXPECT_EQ(bench_outcome(state), BenchOutcome::wrong);
  // The loop's own ending wins over its verdicts.
  state.end = RunEnd::budget_exhausted;
  EXPECT_EQ(bench_outcome(state), BenchOutcome::budget_exhausted);
}

}  // namespace
}  // namespace stitch::app
