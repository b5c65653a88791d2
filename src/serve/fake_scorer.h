// A scorer that runs nothing (tests, `stitchcuda serve --fake-scorer`, the load tool's CPU runs):
// its verdict is read from markers in the source, so a test says what it wants in the program text:
//   FAKE_SLEEP_MS=<n>    takes n milliseconds (interruptible by the cancel token)
//   FAKE_COMPILE_ERROR   does not compile       FAKE_WRONG    wrong outputs
//   FAKE_HACKED          a hack was found       FAKE_INFRA    the machinery failed (an Error)
//   FAKE_NO_GPU          built, nothing ran (a verdict that is no score)
//   FAKE_SPEEDUP=<x>     correct with this speedup (default 1.5)
// Task "unknown" is an unknown task. Every scoring is counted, so tests see that a repeated request
// id was not scored twice.
#pragma once

#include <atomic>

#include "serve/interfaces.h"

namespace stitch::serve {

class FakeScorer final : public CandidateScorer {
 public:
  explicit FakeScorer(int default_sleep_ms = 0) : default_sleep_ms_(default_sleep_ms) {}
  Result<ScoredCandidate> score(const Candidate& candidate, const ScoreContext& context) override;
  int scored() const { return scored_.load(); }

 private:
  int default_sleep_ms_;
  std::atomic<int> scored_{0};
};

}  // namespace stitch::serve
