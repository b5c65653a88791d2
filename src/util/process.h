// Child processes: run a command with a wall-clock limit, capture its output, and kill its whole
// process group on timeout. Behind the ProcessRunner interface so tests can substitute a fake
// (STYLE.md item 10). Used for the Python harness, nvcc, and the stitch-runner sandbox.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace stitch {

struct ResourceLimits {
  std::optional<uint64_t> address_space_bytes;  // RLIMIT_AS
  std::optional<uint64_t> cpu_seconds;          // RLIMIT_CPU
  std::optional<uint64_t> file_size_bytes;      // RLIMIT_FSIZE
  std::optional<uint64_t> open_files;           // RLIMIT_NOFILE
  bool no_core_dumps = true;                    // RLIMIT_CORE = 0
};

struct ProcessSpec {
  std::vector<std::string> argv;                 // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;        // set (or override) in the child
  std::vector<std::string> env_remove;           // removed from the inherited environment
  std::filesystem::path cwd;                     // empty: inherit
  double timeout_s = 0;                          // 0: no limit
  double kill_grace_s = 2.0;                     // SIGTERM, then SIGKILL after this long
  ResourceLimits limits;
  // Where output goes: empty path = captured into ProcessResult (capped at max_captured_bytes).
  std::filesystem::path stdout_path;
  std::filesystem::path stderr_path;
  size_t max_captured_bytes = 16 << 20;
  // Forward each captured stderr line to our stderr as it arrives (for progress of long jobs).
  bool echo_stderr = false;
  // Called with each complete stdout line as it arrives (progress of long jobs); the line is also
  // captured as usual.
  std::function<void(std::string_view line)> on_stdout_line;
  std::string stdin_text;                        // written to the child's stdin, then closed
};

struct ProcessResult {
  int exit_code = -1;     // valid when the child exited normally
  int term_signal = 0;    // non-zero when it was killed by a signal
  bool timed_out = false;
  double wall_s = 0;
  std::string stdout_text;
  std::string stderr_text;

  bool succeeded() const { return !timed_out && term_signal == 0 && exit_code == 0; }
  // "exit code 3", "killed by SIGSEGV", "timed out after 10.0 s".
  std::string describe() const;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;
  // An Error only when the process could not be started; a failing child is a ProcessResult.
  virtual Result<ProcessResult> run(const ProcessSpec& spec) = 0;
};

// Forks and execs; the child gets its own process group, which is killed whole on timeout.
class SystemProcessRunner final : public ProcessRunner {
 public:
  Result<ProcessResult> run(const ProcessSpec& spec) override;
};

// Searches PATH for an executable; empty when not found.
std::string find_in_path(const std::string& name);

}  // namespace stitch
