// The exclusive lock of a run directory (run_lock.h).
#include "run/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "run/events.h"
#include "util/fs.h"

namespace stitch::run {
namespace fs = std::filesystem;
namespace {

// The locks this process holds, by lock file: flock conflicts between two descriptors of one
// process too, and one process opening its run twice is still one holder.
std::mutex held_mutex;
std::map<std::string, std::weak_ptr<RunLock>>& held_locks() {
  static std::map<std::string, std::weak_ptr<RunLock>> locks;
  return locks;
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown host";
  return name;
}

// Replaces the lock file's content with this process's record (for the next one's message).
void write_holder(int fd) {
  const std::string text =
      nlohmann::json{
          {"pid", static_cast<long>(::getpid())}, {"host", host_name()}, {"since", iso_time_now()}}
          .dump() +
      "\n";
  if (::ftruncate(fd, 0) != 0) return;
  (void)::pwrite(fd, text.data(), text.size(), 0);
}

Error held_elsewhere(const fs::path& run_dir) {
  auto holder = read_lock_holder(run_dir);
  if (!holder.ok())
    return make_error(ErrorKind::bad_input,
                      "{}: another process is using this run directory (its lock file {} says "
                      "nothing more: {})",
                      run_dir.string(), kRunLockFile, holder.error().message);
  return make_error(ErrorKind::bad_input,
                    "{}: in use by process {} on {} since {}; wait for it to end or stop it (a "
                    "run directory takes one process at a time)",
                    run_dir.string(), holder->pid, holder->host, holder->since);
}

}  // namespace

Result<LockHolder> read_lock_holder(const fs::path& run_dir) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(run_dir / kRunLockFile));
  const auto doc = nlohmann::json::parse(text, nullptr, false);
  if (!doc.is_object() || !doc.contains("pid") || !doc["pid"].is_number_integer())
    return make_error("{}: not a lock record", (run_dir / kRunLockFile).string());
  LockHolder holder;
  holder.pid = doc["pid"].get<long>();
  holder.host = doc.value("host", "");
  holder.since = doc.value("since", "");
  if (!doc["host"].is_string() || !doc["since"].is_string())
    return make_error("{}: not a lock record", (run_dir / kRunLockFile).string());
  return holder;
}

Result<std::shared_ptr<RunLock>> RunLock::acquire(const fs::path& run_dir) {
  const fs::path path = run_dir / kRunLockFile;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  const std::string key = ec ? fs::absolute(path).string() : canonical.string();
  std::lock_guard<std::mutex> guard(held_mutex);
  if (auto held = held_locks()[key].lock(); held && held->pid_ == ::getpid()) return held;
  // O_CLOEXEC: a child (the harness, nvcc, the runner) outliving this process must not keep it.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error(ErrorKind::machine, "{}: cannot open the run's lock: {}", path.string(),
                      std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) return held_elsewhere(run_dir);
    return make_error(ErrorKind::machine, "{}: cannot lock: {}", path.string(),
                      std::strerror(error));
  }
  write_holder(fd);
  std::shared_ptr<RunLock> lock(new RunLock(key, fd, ::getpid()));
  held_locks()[key] = lock;
  return lock;
}

RunLock::~RunLock() {
  std::lock_guard<std::mutex> guard(held_mutex);
  auto& locks = held_locks();
  if (auto found = locks.find(key_); found != locks.end() && found->second.expired())
    locks.erase(found);
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

}  // namespace stitch::run
