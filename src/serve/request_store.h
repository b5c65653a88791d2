// Where accepted requests live, so that a restart loses none: a request is written (and synced)
// before the service answers that it accepted it, its status follows it through the workers, and
// its final reply is kept for repeats of its id. SqliteRequestStore is the real one (WAL, one
// file); MemoryRequestStore the fake for tests of the service.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve/contracts.h"
#include "util/result.h"

namespace stitch::serve {

struct StoredRequest {
  Candidate candidate;
  RequestStatus status = RequestStatus::queued;
  std::optional<ScoreReply> reply;  // set once final
};

class RequestStore {
 public:
  virtual ~RequestStore() = default;
  // Persists a new request as queued. When its id is already stored, nothing is written and the
  // stored request is returned instead.
  virtual Result<std::optional<StoredRequest>> insert(const Candidate& candidate) = 0;
  virtual Result<std::optional<StoredRequest>> find(const std::string& request_id) = 0;
  virtual Status set_status(const std::string& request_id, RequestStatus status) = 0;
  virtual Status finish(const ScoreReply& reply) = 0;
  // Queued and running requests, in the order they were accepted: what a restart re-queues.
  virtual Result<std::vector<Candidate>> unfinished() = 0;
};

// SQLite in WAL mode with synchronous=FULL: a commit is on disk when insert returns, whatever
// happens to the process afterwards. Thread-safe (one connection behind a mutex).
class SqliteRequestStore final : public RequestStore {
 public:
  static Result<std::unique_ptr<SqliteRequestStore>> open(const std::filesystem::path& path);
  ~SqliteRequestStore() override;
  Result<std::optional<StoredRequest>> insert(const Candidate& candidate) override;
  Result<std::optional<StoredRequest>> find(const std::string& request_id) override;
  Status set_status(const std::string& request_id, RequestStatus status) override;
  Status finish(const ScoreReply& reply) override;
  Result<std::vector<Candidate>> unfinished() override;

 private:
  struct Db;
  explicit SqliteRequestStore(std::unique_ptr<Db> db);
  Result<std::optional<StoredRequest>> find_locked(const std::string& request_id);
  std::unique_ptr<Db> db_;
  std::mutex mutex_;
};

class MemoryRequestStore final : public RequestStore {
 public:
  Result<std::optional<StoredRequest>> insert(const Candidate& candidate) override;
  Result<std::optional<StoredRequest>> find(const std::string& request_id) override;
  Status set_status(const std::string& request_id, RequestStatus status) override;
  Status finish(const ScoreReply& reply) override;
  Result<std::vector<Candidate>> unfinished() override;
  bool fail_inserts = false;  // tests: the store refuses (the service must not accept)

 private:
  std::mutex mutex_;
  std::map<std::string, StoredRequest> requests_;
  std::vector<std::string> order_;
};

}  // namespace stitch::serve
