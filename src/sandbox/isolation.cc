// apply_isolation: the order of the layers (isolation.h), the namespaces, no_new_privs and the
// descriptors. The user, mount and Landlock steps are in identity.cc, mount_view.cc, landlock.cc.
#include "sandbox/isolation.h"

#include <dirent.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "sandbox/isolation_steps.h"

namespace stitch::sandbox {
namespace {

using detail::errno_text;

LayerReport layer(Layer which, bool set_up, std::string detail) {
  return {std::string(enum_name(which)), set_up, std::move(detail)};
}

// Descriptors open above 2 that are not in `keep`, from /proc/self/fd (empty when unreadable).
std::vector<int> open_descriptors(const std::vector<int>& keep) {
  std::vector<int> open;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return open;
  int own = dirfd(dir);
  while (dirent* entry = readdir(dir)) {
    int fd = std::atoi(entry->d_name);
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9' || fd <= 2 || fd == own) continue;
    if (std::find(keep.begin(), keep.end(), fd) == keep.end()) open.push_back(fd);
  }
  closedir(dir);
  return open;
}

LayerReport close_descriptors(const std::vector<int>& keep_fds) {
  std::vector<int> keep = keep_fds;
  std::sort(keep.begin(), keep.end());
  unsigned int next = 3;
  for (int fd : keep) {
    if (fd < static_cast<int>(next)) continue;
    if (fd > static_cast<int>(next) && close_range(next, fd - 1, 0) != 0)
      return layer(Layer::descriptors, false, "close_range: " + errno_text(errno));
    next = fd + 1;
  }
  if (close_range(next, ~0u, 0) != 0)
    return layer(Layer::descriptors, false, "close_range: " + errno_text(errno));
  if (std::vector<int> left = open_descriptors(keep); !left.empty())
    return layer(Layer::descriptors, false, fmt::format("still open: {}", fmt::join(left, ", ")));
  return layer(Layer::descriptors, true,
               keep.empty()
                   ? std::string("everything above 2 closed")
                   : fmt::format("everything above 2 closed but {}", fmt::join(keep, ", ")));
}

// The parent of a new PID namespace: waits for its only child (the caller's continuation) and
// ends the way it ended, so whoever waits for us sees the child's status.
[[noreturn]] void wait_and_mirror(pid_t child) {
  // Our copies of the caller's pipes (a spawner's exec report) must not outlive the child's use.
  close_range(3, ~0u, 0);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    signal(WTERMSIG(status), SIG_DFL);
    kill(getpid(), WTERMSIG(status));
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128);
}

// Unshares the configured namespaces (one call: they share the user namespace made before) and
// forks into the PID namespace. Appends the reports of ipc, network and pid.
bool enter_namespaces(const IsolationConfig& config, std::vector<LayerReport>& reports,
                      std::string& mount_error) {
  int flags = (config.new_mount_namespace ? CLONE_NEWNS : 0) |
              (config.new_ipc_namespace ? CLONE_NEWIPC : 0) |
              (config.new_network_namespace ? CLONE_NEWNET : 0);
  bool already_pid_one = getpid() == 1;
  bool fork_pid = config.new_pid_namespace && !already_pid_one;
  if (fork_pid) flags |= CLONE_NEWPID;
  std::string error = unshare(flags) == 0 ? "" : "unshare: " + errno_text(errno);
  auto report_ns = [&](Layer which, bool wanted, const char* how) {
    if (!wanted) return reports.push_back(layer(which, false, "disabled by the configuration"));
    reports.push_back(error.empty() ? layer(which, true, how) : layer(which, false, error));
  };
  report_ns(Layer::ipc_namespace, config.new_ipc_namespace, "unshare(CLONE_NEWIPC)");
  report_ns(Layer::network_namespace, config.new_network_namespace,
            "unshare(CLONE_NEWNET): loopback only, down");
  if (!config.new_mount_namespace) mount_error = "disabled by the configuration";
  if (!error.empty() && mount_error.empty()) mount_error = error;
  if (already_pid_one) {
    reports.push_back(layer(Layer::pid_namespace, true, "PID 1 of a namespace its spawner made"));
  } else if (!fork_pid) {
    reports.push_back(layer(Layer::pid_namespace, false, "disabled by the configuration"));
  } else if (!error.empty()) {
    reports.push_back(layer(Layer::pid_namespace, false, error));
  } else {
    pid_t child = fork();
    if (child < 0) {
      reports.push_back(layer(Layer::pid_namespace, false, "fork: " + errno_text(errno)));
      return false;
    }
    if (child > 0) wait_and_mirror(child);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    reports.push_back(layer(Layer::pid_namespace, true, "unshare(CLONE_NEWPID) and fork: PID 1"));
  }
  return error.empty();
}

// The writable dir belongs to the ids we drop to (as root; in a user namespace it is ours already).
// A failed chown shows as the honest writes failing, not as a missing layer.
void hand_over_writable_dir(const IsolationConfig& config) {
  if (config.writable_dir.empty()) return;
  if (chown(config.writable_dir.c_str(), config.uid, config.gid) != 0) return;
}

}  // namespace

const LayerReport* find_layer(const std::vector<LayerReport>& reports, Layer which) {
  for (const auto& report : reports)
    if (report.name == enum_name(which)) return &report;
  return nullptr;
}

std::vector<LayerReport> apply_isolation(const IsolationConfig& config) {
  std::vector<LayerReport> reports;
  if (config.close_descriptors)
    reports.push_back(close_descriptors(config.keep_fds));
  else
    reports.push_back(layer(Layer::descriptors, false, "left to close-on-exec (configuration)"));
  bool root = geteuid() == 0;
  std::string user_namespace_error;
  bool in_user_namespace = false;
  if (!root && config.drop_privileges) {
    user_namespace_error = detail::enter_user_namespace();
    in_user_namespace = user_namespace_error.empty();
  }
  if (root && config.drop_privileges) hand_over_writable_dir(config);
  std::string mount_error;
  enter_namespaces(config, reports, mount_error);
  if (mount_error.empty())
    reports.push_back(detail::build_mount_view(config));
  else
    reports.push_back(layer(Layer::mount_namespace, false, mount_error));
  if (config.no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
    reports.push_back(layer(Layer::no_new_privs, true, "PR_SET_NO_NEW_PRIVS"));
  else
    reports.push_back(layer(
        Layer::no_new_privs, false,
        config.no_new_privs ? "prctl: " + errno_text(errno) : "disabled by the configuration"));
  reports.push_back(detail::restrict_with_landlock(config));
  if (!config.drop_privileges)
    reports.push_back(layer(Layer::user, false, "disabled by the configuration"));
  else if (!root && !user_namespace_error.empty())  // capabilities go all the same
    reports.push_back(layer(Layer::user, false,
                            fmt::format("{}; {}", user_namespace_error,
                                        detail::drop_privileges(config, false).detail)));
  else
    reports.push_back(detail::drop_privileges(config, in_user_namespace));
  return reports;
}

}  // namespace stitch::sandbox
