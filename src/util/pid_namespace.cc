// PID namespaces of spawned children; see pid_namespace.h.
#include "util/pid_namespace.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace stitch {
namespace {

// fork without glibc's fork handlers: the only kind of fork that takes CLONE_NEWPID. The child
// runs on a copy of the caller's stack, as after fork. With flags = SIGCHLD it is a plain fork.
pid_t raw_fork(unsigned long flags) {
  return static_cast<pid_t>(syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, 0));
}

// In the child that joined a namespace: wait for the grandchild and end the way it ended.
[[noreturn]] void end_like(pid_t grandchild) {
  int status = 0;
  while (waitpid(grandchild, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int signal_number = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  signal(signal_number, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal_number);
  kill(getpid(), signal_number);
  sigprocmask(SIG_UNBLOCK, &only, nullptr);  // delivered here (core dumps are off: RLIMIT_CORE)
  _exit(128 + signal_number);
}

}  // namespace

std::string pid_namespace_id(pid_t pid) {
  std::string link = pid > 0 ? "/proc/" + std::to_string(pid) + "/ns/pid" : "/proc/self/ns/pid";
  char target[128];
  ssize_t length = readlink(link.c_str(), target, sizeof target - 1);
  if (length <= 0) return "";
  return std::string(target, static_cast<size_t>(length));
}

bool can_create_pid_namespace() {
  static std::once_flag asked;
  static bool permitted = false;
  std::call_once(asked, [] {
    // The namespace's first process must also be able to mount its /proc (mount_own_proc).
    pid_t child = raw_fork(CLONE_NEWPID);
    if (child == 0) _exit(mount_own_proc() == 0 ? 0 : 1);
    if (child < 0) return;
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
    }
    permitted = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  });
  return permitted;
}

namespace {

// The NSpid line of /proc/PID/status (PID as /proc numbers it; "self" for us): outermost first.
std::vector<pid_t> namespace_pids(const std::string& pid) {
  std::ifstream status("/proc/" + pid + "/status");
  std::vector<pid_t> pids;
  for (std::string line; std::getline(status, line);) {
    if (!line.starts_with("NSpid:")) continue;
    std::istringstream fields(line.substr(6));
    for (pid_t value; fields >> value;)
      pids.push_back(value);
    break;
  }
  return pids;
}

}  // namespace

pid_t proc_self_pid() {
  char target[32];
  ssize_t length = readlink("/proc/self", target, sizeof target - 1);
  if (length <= 0) return getpid();
  target[length] = '\0';
  return static_cast<pid_t>(std::atoi(target));
}

pid_t pid_in_own_namespace(pid_t proc_pid) {
  std::vector<pid_t> ours = namespace_pids("self");
  if (ours.empty()) return proc_pid;  // a kernel without NSpid: one namespace as far as we know
  std::vector<pid_t> theirs = namespace_pids(std::to_string(proc_pid));
  if (theirs.size() < ours.size()) return -1;
  return theirs[ours.size() - 1];
}

Result<int> open_pid_namespace(const PidNamespace& pid_namespace) {
  if (pid_namespace.mode != PidNamespaceMode::join) return -1;
  if (pid_namespace.target <= 0)
    return make_error(ErrorKind::machine, "pid namespace: no process to join");
  std::string path = "/proc/" + std::to_string(pid_namespace.target) + "/ns/pid";
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_error(ErrorKind::machine, "pid namespace: cannot open {}: {}", path,
                      std::strerror(errno));
  return fd;
}

pid_t fork_into(const PidNamespace& pid_namespace) {
  return pid_namespace.mode == PidNamespaceMode::own ? raw_fork(CLONE_NEWPID) : fork();
}

int enter_pid_namespace(int namespace_fd, int report_fd) {
  if (setns(namespace_fd, CLONE_NEWPID) != 0) return errno;
  pid_t grandchild = raw_fork(0);
  if (grandchild < 0) return errno;
  if (grandchild == 0) {
    close(namespace_fd);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // the waiting child below is its parent
    return 0;
  }
  // The grandchild reports a failed exec itself; holding the pipe open would hide its success.
  close(report_fd);
  close(namespace_fd);
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // SIGTERM stays blocked here: only SIGKILL would end us
  end_like(grandchild);
}

int mount_own_proc() {
  if (unshare(CLONE_NEWNS) != 0) return errno;
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) return errno;
  return 0;
}

}  // namespace stitch
