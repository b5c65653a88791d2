// Scores each distinct program of a task once. A GRPO group often samples the same program several
// times, and every verification costs seconds of a GPU; a candidate whose task and source (bytes,
// by SHA-256) match one already scored gets that score again, with `breakdown.result_cache` saying
// so. Candidates that arrive while an identical one is being scored wait for it instead of
// verifying it a second time on another GPU.
//
// Only verdicts that belong to the program are kept: passed, wrong, hacked, compile and runtime
// errors. A scorer Error, no_gpu, infrastructure_error and the program's own timeout (which a
// loaded machine can cause) are scored again next time. Kept in memory, least recently used out
// first; a restart starts empty.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "serve/interfaces.h"

namespace stitch::serve {

class CachingScorer final : public CandidateScorer {
 public:
  CachingScorer(CandidateScorer& inner, size_t capacity);
  Result<ScoredCandidate> score(const Candidate& candidate, const ScoreContext& context) override;

  size_t hits() const;
  size_t size() const;

 private:
  struct Entry {
    ScoredCandidate scored;
    std::string first_request;  // the request whose verification this is
  };
  using Lru = std::list<std::string>;  // keys, most recently used first

  void store_locked(const std::string& key, const ScoredCandidate& scored,
                    const std::string& request_id);

  CandidateScorer& inner_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::condition_variable scored_;  // an in-flight key finished (stored or not)
  std::map<std::string, std::pair<Entry, Lru::iterator>> entries_;
  Lru recency_;
  std::set<std::string> in_flight_;
  size_t hits_ = 0;
};

// Whether a score says something about the program itself, so that scoring the same bytes again
// would give the same verdict.
bool belongs_to_program(const ScoredCandidate& scored);

}  // namespace stitch::serve
