// events.jsonl: the append-only log of a run, one JSON object a line. Each append is one write(2)
// followed by fsync, so a crash loses at most the line being written, and a torn last line is
// skipped by readers and fenced off by the next writer.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace stitch::run {

class EventLog {
 public:
  EventLog() = default;
  EventLog(EventLog&& other) noexcept;
  EventLog& operator=(EventLog&& other) noexcept;
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;
  ~EventLog();

  // Opens (creating if needed) for appending; sequence numbers continue after the existing lines.
  static Result<EventLog> open(const std::filesystem::path& path);

  // Appends {"seq": n, "time": "<UTC ISO-8601>", "event": name, ...fields}.
  Status append(const std::string& event, const nlohmann::json& fields = nlohmann::json::object());

  int64_t next_seq() const { return next_seq_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  int64_t next_seq_ = 0;
};

// Now in UTC, ISO-8601 with milliseconds: "2026-11-30T02:15:00.123Z".
std::string iso_time_now();

// Every complete, parseable line of an events file, in order; torn or corrupt lines are skipped.
Result<std::vector<nlohmann::json>> read_events(const std::filesystem::path& path);

}  // namespace stitch::run
