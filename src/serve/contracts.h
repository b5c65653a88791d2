// The reward service's contracts: a candidate to score, what scoring it found, and the reply every
// endpoint sends. A reply always carries the same keys (docs/serve.md "Reply keys") so a trainer
// can log them per key; what is unknown is null, never missing. Read back by reply_from_json
// (tests, the load tool's checks) beside the writer.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/enum_names.h"
#include "util/result.h"

namespace stitch::serve {

// Where a request is. queued and running are not final; the rest are.
enum class RequestStatus : uint8_t {
  queued,    // accepted and persisted, waiting for a worker
  running,   // a worker is scoring it
  done,      // scored: reward and the rest are the verdict's (a wrong program is done, reward 0)
  error,     // could not be scored (unknown task, the verification machinery failed)
  timeout,   // the request's own time limit ran out before its score
  rejected,  // never accepted (bad request, unauthorized, queue full, shutting down)
};
inline constexpr std::array<std::string_view, 6> kRequestStatusNames = {
    "queued", "running", "done", "error", "timeout", "rejected"};
constexpr const auto& enum_names(RequestStatus) {
  return kRequestStatusNames;
}
static_assert(names_every_enumerator(RequestStatus::rejected));

constexpr bool is_final(RequestStatus status) {
  return status != RequestStatus::queued && status != RequestStatus::running;
}

// Why a reply carries no (positive) reward. `none` for a correct program and for replies that are
// not final yet.
enum class ErrorCode : uint8_t {
  none,
  compile_error,         // the program did not build
  runtime_error,         // crashed, CUDA error
  candidate_timeout,     // the program exceeded the runner's time limit
  wrong,                 // ran, wrong outputs
  hacked,                // a reward-hacking pattern was detected: reward 0
  request_timeout,       // the request's own time limit ran out
  unknown_task,          // the task id names no task this service may run
  infrastructure_error,  // the verification failed for reasons that say nothing of the program
  no_gpu,                // built and checked statically, nothing ran
  bad_request,           // the body is not a candidate
  unauthorized,          // missing or wrong bearer token
  queue_full,            // 429: try again after Retry-After
  shutting_down,         // 503: try again after Retry-After (another instance, or after restart)
  id_conflict,           // the request id was used before with another task or source
  not_found,             // no request with that id
  store_failed,          // the request could not be persisted, so it was not accepted
};
inline constexpr std::array<std::string_view, 17> kErrorCodeNames = {
    "none",        "compile_error",   "runtime_error", "candidate_timeout",    "wrong",
    "hacked",      "request_timeout", "unknown_task",  "infrastructure_error", "no_gpu",
    "bad_request", "unauthorized",    "queue_full",    "shutting_down",        "id_conflict",
    "not_found",   "store_failed"};
constexpr const auto& enum_names(ErrorCode) {
  return kErrorCodeNames;
}
static_assert(names_every_enumerator(ErrorCode::store_failed));

// One candidate program for one task.
struct Candidate {
  std::string request_id;  // the client's idempotency key
  std::string task;        // a registered task name or a task file under a tasks directory
  std::string source;      // the CUDA C++ program (one .cu file)
  double timeout_s = 0;    // 0: the service's default
};

// What scoring a candidate found (the scorer's answer; the reward module's breakdown inside).
struct ScoredCandidate {
  double reward = 0;
  bool compiled = false;
  bool correct = false;
  bool hacked = false;
  std::optional<double> speedup;       // vs `baseline`
  std::optional<double> candidate_ms;  // the program's reported median
  std::optional<double> baseline_ms;
  std::string baseline;  // the named baseline the speedup is against ("eager")
  ErrorCode error = ErrorCode::none;
  std::string message;                                  // one short line
  nlohmann::json breakdown = nlohmann::json::object();  // the reward's terms
};

struct ScoreReply {
  std::string request_id;
  std::string task;
  RequestStatus status = RequestStatus::queued;
  ScoredCandidate scored;
  double queued_s = 0;   // accept → start of scoring (0 until it starts)
  double scoring_s = 0;  // start → end of scoring
};

// A reply that is not (yet) a score: queued/running, or refused with `error`.
ScoreReply pending_reply(const Candidate& candidate, RequestStatus status);
ScoreReply refused_reply(std::string request_id, ErrorCode error, std::string message);

nlohmann::json reply_to_json(const ScoreReply& reply);
Result<ScoreReply> reply_from_json(const nlohmann::json& doc);

// A request body: {"request_id", "task", "source", "timeout_s"?}. bad_input naming the field.
Result<Candidate> candidate_from_json(const nlohmann::json& doc);
nlohmann::json candidate_to_json(const Candidate& candidate);

// Stops a scoring: set by the service on its request timeout or at shutdown's end; the deadline
// (steady seconds, the Clock of interfaces.h) is the request's.
struct CancelToken {
  std::atomic<bool> cancelled{false};
  double deadline_s = 0;  // 0: none
  bool stop_requested(double now_s) const {
    return cancelled.load() || (deadline_s > 0 && now_s >= deadline_s);
  }
};

// The keys every reply carries, in order (docs/serve.md; tests check every reply against it).
inline constexpr std::array<std::string_view, 16> kReplyKeys = {
    "request_id", "task",     "status",    "reward",   "compiled",   "correct",
    "hacked",     "speedup",  "baseline",  "runtimes", "error_code", "message",
    "breakdown",  "queued_s", "scoring_s", "format"};

}  // namespace stitch::serve
