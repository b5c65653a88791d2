// The one way this project starts a child process: fork and exec with the command's environment,
// working directory and resource limits, the standard streams the caller chose, its own process
// group (registered in util/child_groups.h, so a signal that ends the orchestrator ends the group),
// and PR_SET_PDEATHSIG as the second layer for when the orchestrator is SIGKILLed. Run to
// completion (util/process.h), the started-child handle (util/child_process.h) and the
// line-protocol child (util/line_child.h) are all built on spawn_child.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "util/pid_namespace.h"
#include "util/result.h"

namespace stitch {

struct ResourceLimits {
  std::optional<uint64_t> address_space_bytes;  // RLIMIT_AS
  std::optional<uint64_t> cpu_seconds;          // RLIMIT_CPU
  std::optional<uint64_t> file_size_bytes;      // RLIMIT_FSIZE
  std::optional<uint64_t> open_files;           // RLIMIT_NOFILE
  bool no_core_dumps = true;                    // RLIMIT_CORE = 0
};

// What every child is started with.
struct CommandSpec {
  std::vector<std::string> argv;           // argv[0] is looked up in PATH
  std::map<std::string, std::string> env;  // set (or override) in the child
  std::vector<std::string> env_remove;     // removed from the inherited environment
  std::filesystem::path cwd;               // empty: inherit
  ResourceLimits limits;
  // inherit, own (PID 1 of a new namespace) or join(pid); util/pid_namespace.h says what each
  // implies for signals, exit status and the child's death.
  PidNamespace pid_namespace;
  // Run in the child after the streams, working directory and limits are set, right before exec
  // (isolation: namespaces, mounts; verify/build/compiler_sandbox.h). False: the child does not
  // exec, and spawn_child reports "sandbox set-up failed" with the errno it left. The child of a
  // multi-threaded parent may allocate here (glibc's malloc is usable after fork) but must not
  // take other locks a parent thread could hold.
  std::function<bool()> child_setup;
};

// A file descriptor closed when it goes out of scope.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};
// Both ends close-on-exec (spawn_child dups the child's end onto 0, 1 or 2).
Result<Pipe> make_pipe();
// Opens `path` for the child's output: created or truncated, close-on-exec.
Result<UniqueFd> open_output_file(const std::filesystem::path& path);

// Our descriptors the child gets as its stdin, stdout and stderr; -1 leaves ours (inherited).
struct ChildStreams {
  int in = -1;
  int out = -1;
  int err = -1;
};

// Starts `command`. The child leads a new process group (its pid), registered before any signal
// can reach us; the caller unregisters it (unregister_child_group) once the group is killed and the
// child reaped — util/child_process.h does both. PR_SET_PDEATHSIG sends the child SIGTERM when the
// thread that started it dies, so start long-lived children from a thread that outlives them.
// An Error (ErrorKind::machine) when it cannot be started: fork failed, the cwd is missing, the PID
// namespace cannot be created or joined, or exec failed (the child reports errno through a
// close-on-exec pipe; "X: command not found" when argv[0] does not exist).
Result<pid_t> spawn_child(const CommandSpec& command, const ChildStreams& streams);

// Searches PATH for an executable; empty when not found.
std::string find_in_path(const std::string& name);

}  // namespace stitch
