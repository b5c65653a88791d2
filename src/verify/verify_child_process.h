// A long-lived child process spoken to in lines: write a line to its stdin, read the next line of
// its stdout with a timeout. util/process.h runs a child to completion; the judge
// (`python -m stitch_harness.judge serve`) instead stays up across several commands, so it needs
// this. The child gets its own process group, and stop() (and the destructor) kill that whole group,
// so nothing the child started (torch.compile workers, a stuck CUDA context) outlives it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/process.h"
#include "util/result.h"

namespace stitch {

struct ChildSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;
  std::vector<std::string> env_remove;
  std::filesystem::path cwd;          // empty: inherit
  std::filesystem::path stderr_path;  // the child's stderr goes here; empty: /dev/null
};

class LineChild {
 public:
  enum class ReadStatus { line, timeout, closed };
  struct ReadResult {
    ReadStatus status = ReadStatus::closed;
    std::string line;  // without the newline
  };

  // An Error when the command cannot be started (not found, not executable, cwd missing).
  static Result<std::unique_ptr<LineChild>> spawn(const ChildSpec& spec);

  LineChild(const LineChild&) = delete;
  LineChild& operator=(const LineChild&) = delete;
  ~LineChild();  // stop(0): the group is killed at once

  // Writes `line` and a newline; an Error when the child no longer reads its stdin.
  Status write_line(std::string_view line);
  // The next complete stdout line, waiting at most `timeout_s`. `closed` when stdout reached its
  // end (the child exited or closed it); a last line without a newline is returned first.
  ReadResult read_line(double timeout_s);
  void close_stdin();

  // Waits up to `grace_s` for the child to exit by itself, then sends SIGTERM to its process group
  // and SIGKILL `kill_grace_s` later; the group is SIGKILLed in the end in any case (grandchildren).
  // Idempotent: later calls return the first result.
  ProcessResult stop(double grace_s, double kill_grace_s = 2.0);

  // Whether the child has exited (it is not reaped, so its process group id stays reserved).
  bool exited();
  pid_t pid() const { return pid_; }

 private:
  LineChild() = default;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int stdout_fd_ = -1;
  std::string pending_;  // stdout bytes after the last returned line
  bool stdout_closed_ = false;
  bool stopped_ = false;
  ProcessResult result_;
  double started_s_ = 0;  // monotonic seconds at spawn
};

}  // namespace stitch
