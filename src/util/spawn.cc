// spawn_child: fork, the child's set-up, exec, and the report of a failed start; see spawn.h.
#include "util/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "util/child_groups.h"

extern char** environ;

namespace stitch {
namespace {

// What the child writes to the exec pipe when it cannot start.
struct StartFailure {
  enum Stage : int { chdir_failed, pid_namespace_failed, setup_failed, exec_failed } stage;
  int error;
};

std::vector<std::string> child_environment(const CommandSpec& command) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string text = *entry;
    size_t eq = text.find('=');
    if (eq != std::string::npos) merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& name : command.env_remove)
    merged.erase(name);
  for (const auto& [name, value] : command.env)
    merged[name] = value;
  std::vector<std::string> result;
  for (const auto& [name, value] : merged)
    result.push_back(name + "=" + value);
  return result;
}

std::vector<char*> pointers_to(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (auto& text : strings)
    pointers.push_back(text.data());
  pointers.push_back(nullptr);
  return pointers;
}

void set_limit(int resource, std::optional<uint64_t> value) {
  if (!value) return;
  rlimit limit{static_cast<rlim_t>(*value), static_cast<rlim_t>(*value)};
  setrlimit(resource, &limit);
}

void use_as(int fd, int target) {
  if (fd < 0) return;
  if (fd == target)
    fcntl(fd, F_SETFD, 0);  // keep it across exec
  else
    dup2(fd, target);
}

// Child side of fork: only async-signal-safe calls until exec. Signals are blocked (the parent
// blocked them around fork), so our handler, copied with the registry, can never run here.
[[noreturn]] void exec_child(const CommandSpec& command, const ChildStreams& streams,
                             char* const* argv, char* const* envp, const sigset_t& caller_mask,
                             pid_t parent, int report_fd, int namespace_fd) {
  reset_child_group_handlers();
  setpgid(0, 0);
  // PID 1 of its own namespace ignores SIGTERM without a handler, and sees its parent as pid 0
  // (outside the namespace), so the check below cannot apply to it.
  bool namespace_init = command.pid_namespace.mode == PidNamespaceMode::own;
  prctl(PR_SET_PDEATHSIG, namespace_init ? SIGKILL : SIGTERM);
  if (!namespace_init && getppid() != parent) _exit(127);  // the parent died before the line above
  use_as(streams.in, 0);
  use_as(streams.out, 1);
  use_as(streams.err, 2);
  StartFailure failure{StartFailure::chdir_failed, 0};
  if (!command.cwd.empty() && chdir(command.cwd.c_str()) != 0) {
    failure.error = errno;
  } else {
    set_limit(RLIMIT_AS, command.limits.address_space_bytes);
    set_limit(RLIMIT_CPU, command.limits.cpu_seconds);
    set_limit(RLIMIT_FSIZE, command.limits.file_size_bytes);
    set_limit(RLIMIT_NOFILE, command.limits.open_files);
    if (command.limits.no_core_dumps) set_limit(RLIMIT_CORE, 0);
    int namespace_error = namespace_fd >= 0 ? enter_pid_namespace(namespace_fd, report_fd) : 0;
    if (namespace_error == 0 && command.pid_namespace.mode != PidNamespaceMode::inherit)
      namespace_error = mount_own_proc();
    if (namespace_error != 0) {
      failure = {StartFailure::pid_namespace_failed, namespace_error};
    } else {
      signal(SIGPIPE, SIG_DFL);  // the parent may ignore it; the child gets the default
      pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
      if (command.child_setup && !command.child_setup()) {
        failure = {StartFailure::setup_failed, errno};
      } else {
        execvpe(argv[0], argv, envp);
        failure = {StartFailure::exec_failed, errno};
      }
    }
  }
  ssize_t ignored = write(report_fd, &failure, sizeof failure);
  (void)ignored;
  _exit(127);
}

Error start_error(const CommandSpec& command, const StartFailure& failure) {
  const std::string& name = command.argv.front();
  if (failure.stage == StartFailure::chdir_failed)
    return make_error(ErrorKind::machine, "cannot run {}: working directory {}: {}", name,
                      command.cwd.string(), std::strerror(failure.error));
  if (failure.stage == StartFailure::pid_namespace_failed)
    return make_error(ErrorKind::machine, "cannot run {}: joining PID namespace of {}: {}", name,
                      command.pid_namespace.target, std::strerror(failure.error));
  if (failure.stage == StartFailure::setup_failed)
    return make_error(ErrorKind::machine, "cannot run {}: its sandbox set-up failed: {}", name,
                      std::strerror(failure.error));
  if (failure.error == ENOENT) return make_error(ErrorKind::machine, "{}: command not found", name);
  return make_error(ErrorKind::machine, "cannot run {}: {}", name, std::strerror(failure.error));
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<Pipe> make_pipe() {
  int ends[2];
  if (pipe2(ends, O_CLOEXEC) != 0)
    return make_error(ErrorKind::machine, "process: pipe failed: {}", std::strerror(errno));
  return Pipe{UniqueFd(ends[0]), UniqueFd(ends[1])};
}

Result<UniqueFd> open_output_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error(ErrorKind::machine, "process: cannot open {}: {}", path.string(),
                      std::strerror(errno));
  return UniqueFd(fd);
}

Result<pid_t> spawn_child(const CommandSpec& command, const ChildStreams& streams) {
  if (command.argv.empty()) return make_error("process: empty command line");
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::vector<std::string> env_strings = child_environment(command);
  std::vector<std::string> argv_strings = command.argv;
  std::vector<char*> envp = pointers_to(env_strings);
  std::vector<char*> argv = pointers_to(argv_strings);
  STITCH_ASSIGN_OR_RETURN(Pipe report, make_pipe());
  STITCH_ASSIGN_OR_RETURN(int namespace_fd_number, open_pid_namespace(command.pid_namespace));
  UniqueFd namespace_fd(namespace_fd_number);
  install_child_group_handlers();

  // Blocked from fork until the group is registered: our handler sees the group, or the signal
  // waits (on this thread; another thread's handler may still miss a group this young, which then
  // dies of the parent-death signal).
  sigset_t fatal, caller_mask;
  child_group_signals(fatal);
  pthread_sigmask(SIG_BLOCK, &fatal, &caller_mask);
  pid_t parent = getpid();
  pid_t pid = fork_into(command.pid_namespace);  // fork(), or a clone into a new PID namespace
  if (pid == 0)
    exec_child(command, streams, argv.data(), envp.data(), caller_mask, parent, report.write.get(),
               namespace_fd.get());
  int fork_errno = errno;
  if (pid > 0) {
    setpgid(pid, pid);  // also from the parent, so a kill right after fork reaches the group
    register_child_group(pid);
  }
  pthread_sigmask(SIG_SETMASK, &caller_mask, nullptr);
  if (pid < 0)
    return make_error(
        ErrorKind::machine, "process: {} failed: {}",
        command.pid_namespace.mode == PidNamespaceMode::own ? "clone(CLONE_NEWPID)" : "fork",
        std::strerror(fork_errno));

  report.write.reset();
  StartFailure failure{};
  ssize_t got;
  do {
    got = read(report.read.get(), &failure, sizeof failure);
  } while (got < 0 && errno == EINTR);
  if (got != static_cast<ssize_t>(sizeof failure)) return pid;  // exec closed the pipe: started
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  unregister_child_group(pid);
  return start_error(command, failure);
}

std::string find_in_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string dirs = path;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

}  // namespace stitch
