// The exclusive lock of a run directory: one process at a time writes a run (`run`, `run --resume`,
// `bench`, `verify`/`profile`/`generate` on a run directory, `eval-kb`). It is a flock(2) on
// `<run>/run.lock`, held for the life of the RunDir objects that share it, so the kernel releases
// it when its holder dies however it dies: a lock file left by a dead process never blocks. The
// file's content (the holder's pid, host and start time) is only for the refusal's message.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "util/result.h"

namespace stitch::run {

inline constexpr std::string_view kRunLockFile = "run.lock";

// Who holds a run directory's lock, as its lock file says.
struct LockHolder {
  long pid = 0;
  std::string host;
  std::string since;  // UTC ISO-8601
};

// The lock file's content, for messages; an error when it is missing or unreadable.
Result<LockHolder> read_lock_holder(const std::filesystem::path& run_dir);

class RunLock {
 public:
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  ~RunLock();

  // Takes `run_dir`'s lock, or shares it when this process holds it already (a run directory
  // opened twice by one process is one holder). Refuses with ErrorKind::bad_input, naming the
  // holder, when another live process holds it.
  static Result<std::shared_ptr<RunLock>> acquire(const std::filesystem::path& run_dir);

 private:
  RunLock(std::string key, int fd, long pid) : key_(std::move(key)), fd_(fd), pid_(pid) {}

  std::string key_;  // the lock file's canonical path
  int fd_ = -1;
  long pid_ = 0;  // the process that took it (a forked child is another holder)
};

}  // namespace stitch::run
