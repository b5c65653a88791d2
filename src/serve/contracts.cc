// The reply and candidate JSON forms (contracts.h).
#include "serve/contracts.h"

namespace stitch::serve {
namespace {

constexpr std::string_view kReplyFormat = "stitchcuda.serve.reply/1";

nlohmann::json optional_number(const std::optional<double>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

std::optional<double> read_optional_number(const nlohmann::json& doc, const char* key) {
  if (!doc.contains(key) || doc[key].is_null()) return std::nullopt;
  return doc[key].get<double>();
}

}  // namespace

ScoreReply pending_reply(const Candidate& candidate, RequestStatus status) {
  ScoreReply reply;
  reply.request_id = candidate.request_id;
  reply.task = candidate.task;
  reply.status = status;
  reply.scored.message = std::string(enum_name(status));
  return reply;
}

ScoreReply refused_reply(std::string request_id, ErrorCode error, std::string message) {
  ScoreReply reply;
  reply.request_id = std::move(request_id);
  reply.status = RequestStatus::rejected;
  reply.scored.error = error;
  reply.scored.message = std::move(message);
  return reply;
}

nlohmann::json reply_to_json(const ScoreReply& reply) {
  const ScoredCandidate& s = reply.scored;
  return {{"request_id", reply.request_id},
          {"task", reply.task},
          {"status", enum_name(reply.status)},
          {"reward", s.reward},
          {"compiled", s.compiled},
          {"correct", s.correct},
          {"hacked", s.hacked},
          {"speedup", optional_number(s.speedup)},
          {"baseline", s.baseline},
          {"runtimes",
           {{"candidate_ms", optional_number(s.candidate_ms)},
            {"baseline_ms", optional_number(s.baseline_ms)}}},
          {"error_code", enum_name(s.error)},
          {"message", s.message},
          {"breakdown", s.breakdown},
          {"queued_s", reply.queued_s},
          {"scoring_s", reply.scoring_s},
          {"format", kReplyFormat}};
}

Result<ScoreReply> reply_from_json(const nlohmann::json& doc) {
  try {
    if (!doc.is_object() || doc.value("format", "") != kReplyFormat)
      return make_error(ErrorKind::bad_input, "not a {} document", kReplyFormat);
    ScoreReply reply;
    reply.request_id = doc.at("request_id").get<std::string>();
    reply.task = doc.at("task").get<std::string>();
    auto status = enum_from_name<RequestStatus>(doc.at("status").get<std::string>());
    auto error = enum_from_name<ErrorCode>(doc.at("error_code").get<std::string>());
    if (!status || !error)
      return make_error(ErrorKind::bad_input, "reply: unknown status or error_code");
    reply.status = *status;
    ScoredCandidate& s = reply.scored;
    s.error = *error;
    s.reward = doc.at("reward").get<double>();
    s.compiled = doc.at("compiled").get<bool>();
    s.correct = doc.at("correct").get<bool>();
    s.hacked = doc.at("hacked").get<bool>();
    s.speedup = read_optional_number(doc, "speedup");
    s.baseline = doc.at("baseline").get<std::string>();
    s.candidate_ms = read_optional_number(doc.at("runtimes"), "candidate_ms");
    s.baseline_ms = read_optional_number(doc.at("runtimes"), "baseline_ms");
    s.message = doc.at("message").get<std::string>();
    s.breakdown = doc.at("breakdown");
    reply.queued_s = doc.at("queued_s").get<double>();
    reply.scoring_s = doc.at("scoring_s").get<double>();
    return reply;
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorKind::bad_input, "reply: {}", e.what());
  }
}

Result<Candidate> candidate_from_json(const nlohmann::json& doc) {
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "the body is not a JSON object");
  Candidate candidate;
  for (auto [key, field] :
       {std::pair{"request_id", &candidate.request_id}, std::pair{"task", &candidate.task},
        std::pair{"source", &candidate.source}}) {
    if (!doc.contains(key) || !doc[key].is_string() || doc[key].get<std::string>().empty())
      return make_error(ErrorKind::bad_input, "'{}' must be a non-empty string", key);
    *field = doc[key].get<std::string>();
  }
  if (candidate.request_id.size() > 200)
    return make_error(ErrorKind::bad_input, "'request_id' is longer than 200 characters");
  // It is a path segment of GET /v1/requests/{id}: no '/', no blanks or control characters.
  for (unsigned char c : candidate.request_id)
    if (c == '/' || c <= ' ' || c == 0x7f)
      return make_error(ErrorKind::bad_input,
                        "'request_id' may not hold '/', blanks or control characters");
  if (doc.contains("timeout_s")) {
    if (!doc["timeout_s"].is_number() || doc["timeout_s"].get<double>() < 0)
      return make_error(ErrorKind::bad_input, "'timeout_s' must be a number >= 0");
    candidate.timeout_s = doc["timeout_s"].get<double>();
  }
  return candidate;
}

nlohmann::json candidate_to_json(const Candidate& candidate) {
  return {{"request_id", candidate.request_id},
          {"task", candidate.task},
          {"source", candidate.source},
          {"timeout_s", candidate.timeout_s}};
}

}  // namespace stitch::serve
