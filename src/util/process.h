// Child processes run to completion: run a command with a wall-clock limit, capture its output,
// and kill its whole process group on timeout. Behind the ProcessRunner interface so tests can
// substitute a fake (STYLE.md item 10). Used for the Python harness, nvcc, and the stitch-runner
// sandbox. Built on spawn_child and ChildProcess (util/spawn.h, util/child_process.h): the child's
// group also dies with the orchestrator.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "util/child_process.h"
#include "util/result.h"
#include "util/spawn.h"

namespace stitch {

struct ProcessSpec : CommandSpec {
  double timeout_s = 0;                          // 0: no limit
  double kill_grace_s = 2.0;                     // SIGTERM, then SIGKILL after this long
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

}  // namespace stitch
