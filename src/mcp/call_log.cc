#include "mcp/call_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

namespace stitch::mcp {

namespace fs = std::filesystem;

std::string dump_line(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z", text, static_cast<int>(millis));
}

Result<std::unique_ptr<FileCallLog>> FileCallLog::open(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorKind::bad_input, "cannot make {}: {}", dir.string(), ec.message());
  const fs::path path = dir / "calls.jsonl";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error(ErrorKind::bad_input, "cannot open {}: {}", path.string(),
                      std::strerror(errno));
  return std::unique_ptr<FileCallLog>(new FileCallLog(path, fd));
}

FileCallLog::~FileCallLog() {
  if (fd_ >= 0) ::close(fd_);
}

void FileCallLog::record(const nlohmann::json& entry) {
  const std::string line = dump_line(entry) + "\n";
  std::lock_guard lock(mutex_);
  size_t written = 0;
  while (written < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + written, line.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // The record is the server's own bookkeeping: say so on stderr and keep serving.
      fmt::print(stderr, "mcp: cannot append to {}: {}\n", path_.string(), std::strerror(errno));
      return;
    }
    written += static_cast<size_t>(n);
  }
  ::fdatasync(fd_);
}

}  // namespace stitch::mcp
