// The scoring cache (result_cache.h).
#include "serve/result_cache.h"

#include <chrono>

#include "verify/build/build_cache.h"  // sha256_hex

namespace stitch::serve {
namespace {

std::string key_of(const Candidate& candidate) {
  return sha256_hex(candidate.task) + sha256_hex(candidate.source);
}

}  // namespace

bool belongs_to_program(const ScoredCandidate& scored) {
  switch (scored.error) {
    case ErrorCode::none:
    case ErrorCode::compile_error:
    case ErrorCode::runtime_error:
    case ErrorCode::wrong:
    case ErrorCode::hacked:
      return true;
    default:
      return false;
  }
}

CachingScorer::CachingScorer(CandidateScorer& inner, size_t capacity)
    : inner_(inner), capacity_(capacity) {}

Result<ScoredCandidate> CachingScorer::score(const Candidate& candidate,
                                             const ScoreContext& context) {
  const std::string key = key_of(candidate);
  {
    std::unique_lock lock(mutex_);
    // An identical candidate being scored on another worker: wait for its verdict.
    while (in_flight_.contains(key) && !context.cancel.stop_requested(context.clock.now_s()))
      scored_.wait_for(lock, std::chrono::milliseconds(50));
    if (auto found = entries_.find(key); found != entries_.end()) {
      auto& [entry, position] = found->second;
      recency_.splice(recency_.begin(), recency_, position);
      ++hits_;
      ScoredCandidate scored = entry.scored;
      scored.breakdown["result_cache"] = {{"hit", true}, {"first_request", entry.first_request}};
      return scored;
    }
    if (context.cancel.stop_requested(context.clock.now_s()))
      return make_error(ErrorKind::work_failed, "cancelled while an identical program was scored");
    in_flight_.insert(key);
  }
  Result<ScoredCandidate> result = inner_.score(candidate, context);
  std::lock_guard lock(mutex_);
  in_flight_.erase(key);
  if (result.ok() && belongs_to_program(*result)) store_locked(key, *result, candidate.request_id);
  scored_.notify_all();
  return result;
}

void CachingScorer::store_locked(const std::string& key, const ScoredCandidate& scored,
                                 const std::string& request_id) {
  if (capacity_ == 0) return;
  if (auto found = entries_.find(key); found != entries_.end()) {
    recency_.erase(found->second.second);
    entries_.erase(found);
  }
  recency_.push_front(key);
  entries_.emplace(key, std::pair{Entry{scored, request_id}, recency_.begin()});
  while (entries_.size() > capacity_) {
    entries_.erase(recency_.back());
    recency_.pop_back();
  }
}

size_t CachingScorer::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

size_t CachingScorer::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace stitch::serve
