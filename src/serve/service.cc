// ScoreService (service.h).
#include "serve/service.h"

#include <algorithm>
#include <chrono>

namespace stitch::serve {
namespace {

constexpr size_t kFinalsKept = 4096;

bool same_request(const Candidate& a, const Candidate& b) {
  return a.task == b.task && a.source == b.source;
}

ErrorCode error_code_of(const Error& error) {
  return error.kind == ErrorKind::bad_input ? ErrorCode::unknown_task
                                            : ErrorCode::infrastructure_error;
}

}  // namespace

ScoreReply stored_reply(const StoredRequest& stored) {
  if (stored.reply) return *stored.reply;
  return pending_reply(stored.candidate, stored.status);
}

ScoreService::ScoreService(RequestStore& store, CandidateScorer& scorer, const Clock& clock,
                           ServiceOptions options)
    : store_(store), scorer_(scorer), clock_(clock), options_(options) {}

ScoreService::~ScoreService() {
  shutdown(0);
}

Result<size_t> ScoreService::start() {
  STITCH_ASSIGN_OR_RETURN(std::vector<Candidate> unfinished, store_.unfinished());
  std::lock_guard lock(mutex_);
  const double now = clock_.now_s();
  for (Candidate& candidate : unfinished) {
    (void)store_.set_status(candidate.request_id, RequestStatus::queued);
    queue_.push_back({std::move(candidate), now});
  }
  accepting_ = true;
  for (int worker = 0; worker < std::max(1, options_.workers); ++worker)
    workers_.emplace_back([this, worker] { work(worker); });
  return unfinished.size();
}

Admitted ScoreService::repeat_of(const StoredRequest& stored, const Candidate& candidate) {
  if (!same_request(stored.candidate, candidate)) {
    metrics_.refused(ErrorCode::id_conflict);
    return {Admission::conflict,
            refused_reply(candidate.request_id, ErrorCode::id_conflict,
                          "this request_id was used with another task or source")};
  }
  std::lock_guard lock(mutex_);
  auto current = current_locked(candidate.request_id);
  return {Admission::duplicate, current ? *current : stored_reply(stored)};
}

Admitted ScoreService::submit(const Candidate& candidate) {
  auto refuse = [&](Admission admission, ErrorCode error, std::string message) {
    metrics_.refused(error);
    return Admitted{admission, refused_reply(candidate.request_id, error, std::move(message))};
  };
  {
    std::lock_guard lock(mutex_);
    if (!accepting_)
      return refuse(Admission::shutting_down, ErrorCode::shutting_down, "shutting down");
  }
  // A repeat is answered whatever the load.
  auto seen = store_.find(candidate.request_id);
  if (!seen.ok())
    return refuse(Admission::store_failed, ErrorCode::store_failed, seen.error().message);
  if (*seen) return repeat_of(**seen, candidate);
  {
    std::lock_guard lock(mutex_);
    if (queue_.size() + reserved_ >= options_.queue_capacity)
      return refuse(Admission::queue_full, ErrorCode::queue_full,
                    "the queue is full; retry after Retry-After seconds");
    ++reserved_;
  }
  // Persisted before it is accepted: a crash after this line loses nothing the client was told.
  auto existing = store_.insert(candidate);
  std::unique_lock lock(mutex_);
  --reserved_;
  if (!existing.ok()) {
    lock.unlock();
    return refuse(Admission::store_failed, ErrorCode::store_failed, existing.error().message);
  }
  if (*existing) {  // the same id arrived twice at once
    lock.unlock();
    return repeat_of(**existing, candidate);
  }
  queue_.push_back({candidate, clock_.now_s()});
  metrics_.accepted();
  work_ready_.notify_one();
  return {Admission::accepted, pending_reply(candidate, RequestStatus::queued)};
}

std::optional<ScoreReply> ScoreService::current_locked(const std::string& request_id) const {
  if (auto it = finals_.find(request_id); it != finals_.end()) return it->second;
  if (auto it = running_.find(request_id); it != running_.end())
    return pending_reply(it->second.candidate, RequestStatus::running);
  for (const Queued& queued : queue_)
    if (queued.candidate.request_id == request_id)
      return pending_reply(queued.candidate, RequestStatus::queued);
  return std::nullopt;
}

std::optional<ScoreReply> ScoreService::lookup(const std::string& request_id) {
  {
    std::lock_guard lock(mutex_);
    if (auto current = current_locked(request_id)) return current;
  }
  auto stored = store_.find(request_id);
  if (!stored.ok() || !*stored) return std::nullopt;
  return stored_reply(**stored);
}

std::optional<ScoreReply> ScoreService::wait(const std::string& request_id, double wait_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  std::unique_lock lock(mutex_);
  for (;;) {
    std::optional<ScoreReply> current = current_locked(request_id);
    if (!current) break;
    if (is_final(current->status) || std::chrono::steady_clock::now() >= until) return current;
    reply_ready_.wait_until(lock, until);
  }
  lock.unlock();
  return lookup(request_id);
}

double ScoreService::deadline_of(const Candidate& candidate, double accepted_s) const {
  const double timeout = candidate.timeout_s > 0 ? candidate.timeout_s : options_.default_timeout_s;
  return accepted_s + std::min(timeout, options_.max_timeout_s);
}

void ScoreService::work(int worker) {
  for (;;) {
    Queued queued;
    auto cancel = std::make_shared<CancelToken>();
    double started_s = 0;
    {
      std::unique_lock lock(mutex_);
      work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      queued = std::move(queue_.front());
      queue_.pop_front();
      started_s = clock_.now_s();
      cancel->deadline_s = deadline_of(queued.candidate, queued.accepted_s);
      running_[queued.candidate.request_id] = {queued.candidate, cancel, started_s};
    }
    const std::string& id = queued.candidate.request_id;
    (void)store_.set_status(id, RequestStatus::running);
    ScoreReply reply = score(queued, *cancel, worker, started_s);
    if (reply.status == RequestStatus::queued) {  // returned at shutdown: the next start takes it
      (void)store_.set_status(id, RequestStatus::queued);
      std::lock_guard lock(mutex_);
      running_.erase(id);
      reply_ready_.notify_all();
      continue;
    }
    record_final(reply, queued.accepted_s);
  }
}

ScoreReply ScoreService::score(const Queued& queued, const CancelToken& cancel, int worker,
                               double started_s) {
  const Candidate& candidate = queued.candidate;
  ScoreReply reply = pending_reply(candidate, RequestStatus::done);
  reply.queued_s = started_s - queued.accepted_s;
  auto timed_out = [&] {
    reply.status = RequestStatus::timeout;
    reply.scored = {};
    reply.scored.error = ErrorCode::request_timeout;
    reply.scored.message = "the request's time limit ran out before its score";
    return reply;
  };
  if (cancel.stop_requested(started_s)) return timed_out();
  auto scored = scorer_.score(candidate, ScoreContext{worker, cancel, clock_});
  reply.scoring_s = clock_.now_s() - started_s;
  if (scored.ok()) {
    reply.scored = std::move(*scored);
    // A verification that says nothing about the program is no score, whatever its reward field.
    const bool verdict = reply.scored.error != ErrorCode::no_gpu &&
                         reply.scored.error != ErrorCode::infrastructure_error;
    reply.status = verdict ? RequestStatus::done : RequestStatus::error;
    return reply;
  }
  if (cancel.cancelled.load()) {
    reply.status = RequestStatus::queued;
    return reply;
  }
  if (cancel.stop_requested(clock_.now_s())) return timed_out();
  reply.status = RequestStatus::error;
  reply.scored = {};
  reply.scored.error = error_code_of(scored.error());
  reply.scored.message = scored.error().message.substr(0, 300);
  return reply;
}

void ScoreService::record_final(const ScoreReply& reply, double accepted_s) {
  (void)store_.finish(reply);  // a failed write leaves it unfinished: scored again on restart
  std::lock_guard lock(mutex_);
  running_.erase(reply.request_id);
  finals_[reply.request_id] = reply;
  finals_order_.push_back(reply.request_id);
  if (finals_order_.size() > kFinalsKept) {
    finals_.erase(finals_order_.front());
    finals_order_.pop_front();
  }
  metrics_.finished(reply.status, clock_.now_s() - accepted_s);
  reply_ready_.notify_all();
}

void ScoreService::shutdown(double grace_s) {
  std::unique_lock lock(mutex_);
  accepting_ = false;
  stopping_ = true;
  work_ready_.notify_all();
  reply_ready_.wait_for(lock, std::chrono::duration<double>(std::max(0.0, grace_s)),
                        [this] { return running_.empty(); });
  for (auto& [id, running] : running_)
    running.cancel->cancelled = true;
  std::vector<std::thread> workers = std::move(workers_);
  workers_.clear();
  lock.unlock();
  for (std::thread& worker : workers)
    worker.join();
}

Gauges ScoreService::gauges() const {
  std::lock_guard lock(mutex_);
  return {queue_.size(), running_.size(), options_.workers, !accepting_};
}

}  // namespace stitch::serve
