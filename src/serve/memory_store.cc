// MemoryRequestStore (request_store.h): the store's fake.
#include "serve/request_store.h"

namespace stitch::serve {

Result<std::optional<StoredRequest>> MemoryRequestStore::insert(const Candidate& candidate) {
  std::lock_guard lock(mutex_);
  if (fail_inserts) return make_error(ErrorKind::machine, "memory store: inserts refused");
  if (auto it = requests_.find(candidate.request_id); it != requests_.end())
    return std::optional<StoredRequest>(it->second);
  requests_[candidate.request_id] = StoredRequest{candidate, RequestStatus::queued, std::nullopt};
  order_.push_back(candidate.request_id);
  return std::optional<StoredRequest>();
}

Result<std::optional<StoredRequest>> MemoryRequestStore::find(const std::string& request_id) {
  std::lock_guard lock(mutex_);
  if (auto it = requests_.find(request_id); it != requests_.end())
    return std::optional<StoredRequest>(it->second);
  return std::optional<StoredRequest>();
}

Status MemoryRequestStore::set_status(const std::string& request_id, RequestStatus status) {
  std::lock_guard lock(mutex_);
  auto it = requests_.find(request_id);
  if (it == requests_.end()) return make_error("memory store: no request '{}'", request_id);
  it->second.status = status;
  return {};
}

Status MemoryRequestStore::finish(const ScoreReply& reply) {
  std::lock_guard lock(mutex_);
  auto it = requests_.find(reply.request_id);
  if (it == requests_.end()) return make_error("memory store: no request '{}'", reply.request_id);
  it->second.status = reply.status;
  it->second.reply = reply;
  return {};
}

Result<std::vector<Candidate>> MemoryRequestStore::unfinished() {
  std::lock_guard lock(mutex_);
  std::vector<Candidate> candidates;
  for (const auto& id : order_)
    if (!is_final(requests_[id].status)) candidates.push_back(requests_[id].candidate);
  return candidates;
}

}  // namespace stitch::serve
