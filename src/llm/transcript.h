// Transcripts of the LLM exchanges: every request and reply as files in a directory the caller
// names (an attempt's llm/): NN-<label>.request.json, NN-<label>.reply.json and the raw bytes the
// server sent, NN-<label>.raw.txt. NN counts up across every client writing there, so a planner's
// and a coder's exchanges in one directory interleave in the order they were sent.
//
// Whatever goes to a file passes a Redactor first: the API key, read from its environment variable
// at send time, is replaced wherever it appears (a server that echoes the request's headers back).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "llm/chat.h"
#include "util/result.h"

namespace stitch::llm {

namespace fs = std::filesystem;

class Redactor {
 public:
  explicit Redactor(std::string secret = "") : secret_(std::move(secret)) {}
  std::string redact(std::string_view text) const;
  const std::string& secret() const { return secret_; }

 private:
  std::string secret_;
};

inline constexpr std::string_view kRedacted = "[redacted]";

class TranscriptWriter {
 public:
  // An empty directory: writes nothing.
  explicit TranscriptWriter(fs::path dir) : dir_(std::move(dir)) {}
  bool enabled() const { return !dir_.empty(); }

  // Takes the next number in the directory and writes NN-<label>.request.json; returns the
  // stem "NN-<label>" that the exchange's other files share (empty when disabled).
  Result<std::string> begin(std::string_view label, const nlohmann::json& request,
                            const Redactor& redactor);
  // Writes <stem><suffix> (".reply.json", ".raw.txt"), redacted.
  Status write(std::string_view stem, std::string_view suffix, std::string_view text,
               const Redactor& redactor) const;

 private:
  fs::path dir_;
};

// NN-<label>.reply.json: how the exchange went (one entry per HTTP attempt: status, transport
// failure, the problem, the wait before the next) and its reply or its error.
struct ReplyRecord {
  nlohmann::json attempts = nlohmann::json::array();
  double seconds = 0;
  bool response_format_dropped = false;
  std::optional<ChatReply> reply;
  std::string error;  // when there is no reply
};
nlohmann::json reply_record_to_json(const ReplyRecord& record);
Result<ReplyRecord> read_reply_record(const fs::path& path);

}  // namespace stitch::llm
