// The reward service's side effects, each behind a small interface with a fake (STYLE.md item 10):
// what scores a candidate, how many GPUs there are, and the clock. Storage is request_store.h's.
#pragma once

#include <chrono>

#include "serve/contracts.h"
#include "util/result.h"

namespace stitch::serve {

// Monotonic seconds: latencies, request deadlines.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now_s() const = 0;
};

class SteadyClock final : public Clock {
 public:
  double now_s() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// Where one scoring runs: the worker's index is its GPU's (one worker per GPU).
struct ScoreContext {
  int worker = 0;
  const CancelToken& cancel;
  const Clock& clock;
};

// Scores one candidate: verifies it against its task and computes the reward. A wrong, hacked or
// non-compiling program is a ScoredCandidate (data); an Error means it could not be scored at all
// (unknown task: bad_input; the machinery: machine / work_failed). Must return soon after
// context.cancel says stop (it is then a request timeout or a shutdown).
class CandidateScorer {
 public:
  virtual ~CandidateScorer() = default;
  virtual Result<ScoredCandidate> score(const Candidate& candidate,
                                        const ScoreContext& context) = 0;
};

// How many GPUs this machine has: the service runs one worker per GPU.
class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  virtual int gpu_count() = 0;
};

}  // namespace stitch::serve

namespace stitch::serve {

// Workers to run: `requested` when positive, else one per GPU (at least one: without a GPU the
// verifier still builds and checks statically, and answers no_gpu).
inline int worker_count(int requested, GpuProbe& probe) {
  if (requested > 0) return requested;
  const int gpus = probe.gpu_count();
  return gpus > 0 ? gpus : 1;
}

}  // namespace stitch::serve
