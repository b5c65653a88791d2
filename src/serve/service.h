// The scoring service without HTTP: admission into a bounded queue (each request persisted before
// it counts as accepted), one worker thread per GPU taking requests in order, per-request
// deadlines, idempotent request ids, and a graceful shutdown. http_api.h puts it on the wire.
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/contracts.h"
#include "serve/interfaces.h"
#include "serve/metrics.h"
#include "serve/request_store.h"

namespace stitch::serve {

struct ServiceOptions {
  int workers = 1;                  // one per GPU
  size_t queue_capacity = 256;      // queued (not running) requests before 429
  double default_timeout_s = 1800;  // accept → final reply, when the request names none
  double max_timeout_s = 7200;      // a request's timeout_s is clamped to this
};

enum class Admission : uint8_t {
  accepted,       // new: persisted and queued
  duplicate,      // the id was seen before: `reply` is its stored or current reply
  conflict,       // the id was seen before with another task or source
  queue_full,     // 429
  shutting_down,  // 503
  store_failed,   // 503: could not be persisted, so not accepted
};

struct Admitted {
  Admission admission;
  ScoreReply reply;
};

class ScoreService {
 public:
  ScoreService(RequestStore& store, CandidateScorer& scorer, const Clock& clock,
               ServiceOptions options);
  ~ScoreService();  // shutdown(0) when still running
  ScoreService(const ScoreService&) = delete;
  ScoreService& operator=(const ScoreService&) = delete;

  // Re-queues what the store holds unfinished (a previous run's accepted requests, in accept
  // order, beyond the queue's capacity if need be) and starts the workers. Returns how many.
  Result<size_t> start();

  Admitted submit(const Candidate& candidate);
  // The request's reply once final, or its current (queued / running) reply after `wait_s`;
  // nullopt when no such request exists.
  std::optional<ScoreReply> wait(const std::string& request_id, double wait_s);
  std::optional<ScoreReply> lookup(const std::string& request_id);

  // Stops accepting; requests still queued stay queued in the store (the next start takes them);
  // requests being scored get `grace_s` to finish, then are cancelled and set back to queued.
  // Idempotent; returns once every worker has stopped.
  void shutdown(double grace_s);

  Gauges gauges() const;
  const ServiceMetrics& metrics() const { return metrics_; }
  ServiceMetrics& metrics() { return metrics_; }

 private:
  struct Running {
    Candidate candidate;
    std::shared_ptr<CancelToken> cancel;
    double started_s = 0;
  };
  struct Queued {
    Candidate candidate;
    double accepted_s = 0;
  };

  Admitted repeat_of(const StoredRequest& stored, const Candidate& candidate);
  void work(int worker);
  ScoreReply score(const Queued& queued, const CancelToken& cancel, int worker, double started_s);
  void record_final(const ScoreReply& reply, double accepted_s);
  std::optional<ScoreReply> current_locked(const std::string& request_id) const;
  double deadline_of(const Candidate& candidate, double accepted_s) const;

  RequestStore& store_;
  CandidateScorer& scorer_;
  const Clock& clock_;
  ServiceOptions options_;
  ServiceMetrics metrics_;

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable reply_ready_;
  std::deque<Queued> queue_;
  std::map<std::string, Running> running_;
  std::map<std::string, ScoreReply> finals_;  // recent final replies (bounded; the store has all)
  std::deque<std::string> finals_order_;
  size_t reserved_ = 0;  // admissions between the capacity check and the queue
  bool accepting_ = false;
  bool stopping_ = false;  // workers take nothing new
  std::vector<std::thread> workers_;
};

// The reply of a request as the store holds it (final reply, or pending with its status).
ScoreReply stored_reply(const StoredRequest& stored);

}  // namespace stitch::serve
