// A started child that runs alongside us: start it, poll or wait for its end, stop it (SIGTERM to
// its process group, SIGKILL after a grace). Whatever way it ends, its whole process group is
// killed before it is reaped, so nothing it started outlives it, and the destructor stops a child
// still running. Built on spawn_child (util/spawn.h): the group also dies with us on SIGINT,
// SIGTERM or SIGHUP. Run to completion (util/process.h) and the line-protocol child
// (util/line_child.h) are built on it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "util/result.h"
#include "util/spawn.h"

namespace stitch {

struct ProcessResult {
  int exit_code = -1;     // valid when the child exited normally
  int term_signal = 0;    // non-zero when it was killed by a signal
  bool timed_out = false;  // it was stopped by a deadline (or by stop() after its grace)
  double wall_s = 0;
  std::string stdout_text;  // captured by run to completion (util/process.h) only
  std::string stderr_text;

  bool succeeded() const { return !timed_out && term_signal == 0 && exit_code == 0; }
  // "exit code 3", "killed by SIGSEGV", "timed out after 10.0 s".
  std::string describe() const;
};

// A child started on its own: stdout and stderr go to files or stay ours, stdin stays ours.
struct ChildSpec : CommandSpec {
  std::filesystem::path stdout_path;  // empty: ours
  std::filesystem::path stderr_path;  // empty: ours; the same path as stdout_path: one file for both
};

class ChildProcess {
 public:
  // An Error (ErrorKind::machine) when it cannot be started.
  static Result<ChildProcess> start(const ChildSpec& spec);
  // Takes charge of a child spawn_child started (its group registered).
  explicit ChildProcess(pid_t pid);

  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // stop(0, 0.5) when still running

  pid_t pid() const { return pid_; }
  // Whether the child has exited. It is not reaped until poll/wait/stop, so its process group id
  // stays reserved and a kill of the group can never reach an unrelated one.
  bool exited();
  // nullopt while it runs; once it has exited, its group is killed, it is reaped and its end
  // returned (later calls return the same).
  std::optional<ProcessResult> poll();
  ProcessResult wait();
  // Signals its whole group (SIGTERM, SIGKILL); no effect once it has been reaped.
  void signal_group(int signal_number);
  // Waits up to `grace_s` for it to exit by itself, then SIGTERM to its group and SIGKILL
  // `kill_grace_s` later; timed_out when it had to be signalled. Idempotent.
  ProcessResult stop(double grace_s, double kill_grace_s = 2.0);

 private:
  ProcessResult reap(bool timed_out);

  pid_t pid_ = -1;
  double started_s_ = 0;  // monotonic seconds at start
  std::optional<ProcessResult> result_;  // set once reaped
};

}  // namespace stitch
