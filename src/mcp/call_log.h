// Every message the MCP server handles, recorded as it happens: calls.jsonl in the server's record
// directory, one JSON object a line — the request when it arrives (before any work), the response
// when it is sent, with the milliseconds between. Each line is one write(2) on an O_APPEND file
// followed by fdatasync, so a crash of the server (or the machine) loses at most the line being
// written and never garbles an earlier one.
#pragma once

#include <filesystem>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace stitch::mcp {

class CallLog {
 public:
  virtual ~CallLog() = default;
  // One record; safe to call from several threads.
  virtual void record(const nlohmann::json& entry) = 0;
};

// Appends to `<dir>/calls.jsonl` (made with its parents).
class FileCallLog : public CallLog {
 public:
  static Result<std::unique_ptr<FileCallLog>> open(const std::filesystem::path& dir);
  ~FileCallLog() override;
  void record(const nlohmann::json& entry) override;
  const std::filesystem::path& path() const { return path_; }

 private:
  FileCallLog(std::filesystem::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::filesystem::path path_;
  int fd_ = -1;
  std::mutex mutex_;
};

// The JSON of any value as one line; bytes that are not UTF-8 (a compiler's message) are replaced
// rather than thrown on.
std::string dump_line(const nlohmann::json& value);

// UTC now as 2026-12-02T06:42:38.123Z.
std::string utc_timestamp();

}  // namespace stitch::mcp
