// A long-lived child process spoken to in lines: write a line to its stdin, read the next line of
// its stdout with a timeout. util/process.h runs a child to completion; the judge
// (`python -m stitch_harness.judge serve`) instead stays up across several commands, so it needs
// this. A ChildProcess underneath (util/child_process.h): stop() (and the destructor) kill the
// child's whole process group, so nothing it started (torch.compile workers, a stuck CUDA context)
// outlives it, and the group dies with the orchestrator.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <string_view>

#include "util/child_process.h"
#include "util/result.h"
#include "util/spawn.h"

namespace stitch {

class LineChild {
 public:
  enum class ReadStatus { line, timeout, closed };
  struct ReadResult {
    ReadStatus status = ReadStatus::closed;
    std::string line;  // without the newline
  };

  // stdout is the line pipe (spec.stdout_path must be empty); stderr goes to spec.stderr_path, or
  // /dev/null when that is empty. An Error when the command cannot be started (not found, not
  // executable, cwd missing).
  static Result<std::unique_ptr<LineChild>> spawn(const ChildSpec& spec);

  LineChild(const LineChild&) = delete;
  LineChild& operator=(const LineChild&) = delete;
  ~LineChild();  // stop(0, 0.5): SIGTERM to the group at once, SIGKILL soon after

  // Writes `line` and a newline; an Error when the child no longer reads its stdin.
  Status write_line(std::string_view line);
  // The next complete stdout line, waiting at most `timeout_s`. `closed` when stdout reached its
  // end (the child exited or closed it); a last line without a newline is returned first.
  ReadResult read_line(double timeout_s);
  void close_stdin();

  // Closes its stdin, then ChildProcess::stop: waits up to `grace_s` for the child to exit by
  // itself, then SIGTERM to its group and SIGKILL `kill_grace_s` later; the group is SIGKILLed in
  // the end in any case (grandchildren). Idempotent: later calls return the first result.
  ProcessResult stop(double grace_s, double kill_grace_s = 2.0);

  // Whether the child has exited (it is not reaped, so its process group id stays reserved).
  bool exited() { return child_.exited(); }
  pid_t pid() const { return child_.pid(); }

 private:
  LineChild(ChildProcess child, UniqueFd stdin_fd, UniqueFd stdout_fd);

  ChildProcess child_;
  UniqueFd stdin_;
  UniqueFd stdout_;
  std::string pending_;  // stdout bytes after the last returned line
  bool stdout_closed_ = false;
};

}  // namespace stitch
