#include "run/events.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "run/run_dir.h"
#include "util/fs.h"

namespace stitch::run {

std::string iso_time_now() {
  auto now = std::chrono::system_clock::now();
  auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[40];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03}Z", text, millis);
}

EventLog::EventLog(EventLog&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), next_seq_(other.next_seq_) {
  other.fd_ = -1;
}

EventLog& EventLog::operator=(EventLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    next_seq_ = other.next_seq_;
    other.fd_ = -1;
  }
  return *this;
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

Result<EventLog> EventLog::open(const std::filesystem::path& path) {
  EventLog log;
  log.path_ = path;
  int64_t last_seq = -1;
  bool torn_tail = false;
  if (std::filesystem::exists(path)) {
    STITCH_ASSIGN_OR_RETURN(auto text, read_file(path));
    torn_tail = !text.empty() && text.back() != '\n';
    STITCH_ASSIGN_OR_RETURN(auto events, read_events(path));
    for (const auto& event : events)
      if (event.contains("seq") && event["seq"].is_number_integer())
        last_seq = std::max<int64_t>(last_seq, event["seq"].get<int64_t>());
  }
  log.fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log.fd_ < 0) return make_error("{}: cannot open for append: {}", path.string(), std::strerror(errno));
  log.next_seq_ = last_seq + 1;
  // A crash mid-line left a torn tail: end it so the next event starts on its own line.
  if (torn_tail && ::write(log.fd_, "\n", 1) != 1)
    return make_error("{}: write failed: {}", path.string(), std::strerror(errno));
  return log;
}

Status EventLog::append(const std::string& event, const nlohmann::json& fields) {
  if (fd_ < 0) return make_error("event log is not open");
  nlohmann::json line = {{"seq", next_seq_}, {"time", iso_time_now()}, {"event", event}};
  if (fields.is_object()) line.update(fields);
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  ssize_t written = ::write(fd_, text.data(), text.size());
  if (written != static_cast<ssize_t>(text.size()))
    return make_error("{}: append failed: {}", path_.string(), std::strerror(errno));
  if (::fsync(fd_) != 0) return make_error("{}: fsync failed: {}", path_.string(), std::strerror(errno));
  ++next_seq_;
  return {};
}

Result<std::vector<nlohmann::json>> read_events(const std::filesystem::path& path) {
  STITCH_ASSIGN_OR_RETURN(auto text, read_file(path));
  std::vector<nlohmann::json> events;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) break;  // torn last line: not an event
    auto parsed = nlohmann::json::parse(text.begin() + start, text.begin() + end, nullptr, false);
    if (!parsed.is_discarded() && parsed.is_object()) events.push_back(std::move(parsed));
    start = end + 1;
  }
  return events;
}

}  // namespace stitch::run
