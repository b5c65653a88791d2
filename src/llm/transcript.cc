#include "llm/transcript.h"

#include <fmt/format.h>

#include <fstream>
#include <mutex>

#include "llm/chat_wire.h"
#include "util/json_fields.h"

namespace stitch::llm {

namespace {

// Letters, digits, '-', '_' and '.': a label becomes part of a file name.
std::string file_label(std::string_view label) {
  std::string out;
  for (char c : label)
    out +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  return out.empty() ? "chat" : out;
}

// One past the highest NN among the directory's "NN-*" files.
int next_number(const fs::path& dir) {
  int highest = 0;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    size_t dash = name.find('-');
    if (dash == 0 || dash == std::string::npos) continue;
    try {
      highest = std::max(highest, std::stoi(name.substr(0, dash)));
    } catch (const std::exception&) {
    }
  }
  return highest + 1;
}

}  // namespace

std::string Redactor::redact(std::string_view text) const {
  std::string out(text);
  if (secret_.empty()) return out;
  for (size_t at = out.find(secret_); at != std::string::npos;
       at = out.find(secret_, at + kRedacted.size()))
    out.replace(at, secret_.size(), kRedacted);
  return out;
}

Result<std::string> TranscriptWriter::begin(std::string_view label, const nlohmann::json& request,
                                            const Redactor& redactor) {
  if (!enabled()) return std::string();
  // Numbers are taken under one lock, so clients on several threads never share one.
  static std::mutex numbering;
  std::lock_guard lock(numbering);
  std::error_code error;
  fs::create_directories(dir_, error);
  if (error)
    return make_error(ErrorKind::machine, "creating transcript directory {}: {}", dir_.string(),
                      error.message());
  std::string stem = fmt::format("{:02}-{}", next_number(dir_), file_label(label));
  STITCH_TRY(write(stem, ".request.json", request.dump(2), redactor));
  return stem;
}

Status TranscriptWriter::write(std::string_view stem, std::string_view suffix,
                               std::string_view text, const Redactor& redactor) const {
  if (!enabled()) return {};
  fs::path path = dir_ / (std::string(stem) + std::string(suffix));
  std::ofstream out(path, std::ios::binary);
  out << redactor.redact(text);
  out.close();
  if (!out) return make_error(ErrorKind::machine, "writing transcript {}", path.string());
  return {};
}

nlohmann::json reply_record_to_json(const ReplyRecord& record) {
  nlohmann::json doc = {{"attempts", record.attempts},
                        {"seconds", record.seconds},
                        {"response_format_dropped", record.response_format_dropped}};
  if (record.reply)
    doc["reply"] = reply_to_json(*record.reply);
  else
    doc["error"] = record.error;
  return doc;
}

Result<ReplyRecord> read_reply_record(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorKind::bad_input, "cannot read {}", path.string());
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object())
    return make_error(ErrorKind::bad_input, "{}: not a JSON object", path.string());
  ReplyRecord record;
  if (doc.contains("attempts") && doc["attempts"].is_array()) record.attempts = doc["attempts"];
  record.seconds = number_or(doc, "seconds", 0);
  record.response_format_dropped = doc.value("response_format_dropped", false);
  record.error = string_or(doc, "error");
  if (doc.contains("reply")) {
    auto reply = reply_from_json(doc["reply"]);
    if (!reply.ok()) return reply.error().with_context(path.string());
    record.reply = std::move(*reply);
  }
  return record;
}

}  // namespace stitch::llm
