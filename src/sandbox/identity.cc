// The `user` layer (isolation.h step 6) and the user namespace an unprivileged caller needs first.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "sandbox/isolation_steps.h"

namespace stitch::sandbox::detail {
namespace {

int last_capability() {
  std::ifstream file("/proc/sys/kernel/cap_last_cap");
  int last = 0;
  if (file >> last) return last;
  return 40;  // CAP_CHECKPOINT_RESTORE, the last one in 6.x kernels
}

bool capget_all(__user_cap_data_struct (&data)[2]) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  return syscall(SYS_capget, &header, data) == 0;
}

// Clears effective, permitted and inheritable sets; the ambient set follows the permitted one.
bool clear_capabilities() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  return syscall(SYS_capset, &header, data) == 0;
}

// Empty when nothing is left, else what is.
std::string capabilities_left() {
  __user_cap_data_struct data[2] = {};
  if (!capget_all(data)) return "capget failed: " + errno_text(errno);
  for (const auto& word : data)
    if (word.effective != 0 || word.permitted != 0 || word.inheritable != 0)
      return fmt::format("capabilities left: effective {:#x} permitted {:#x}", word.effective,
                         word.permitted);
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_SYS_ADMIN, 0, 0) == 1)
    return "ambient CAP_SYS_ADMIN left";
  return "";
}

void drop_bounding_set() {
  for (int cap = 0; cap <= last_capability(); ++cap)
    prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
}

}  // namespace

std::string errno_text(int error) {
  const char* name = strerrorname_np(error);
  return fmt::format("{} ({})", name ? name : "errno " + std::to_string(error),
                     std::strerror(error));
}

bool write_proc_file(const char* path, const std::string& text) {
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int error = errno;
  ::close(fd);
  errno = error;
  return ok;
}

std::string enter_user_namespace() {
  uid_t uid = getuid();
  gid_t gid = getgid();
  if (unshare(CLONE_NEWUSER) != 0) return "unshare(CLONE_NEWUSER): " + errno_text(errno);
  // A process that changed its ids (setresuid from root) is not dumpable, and its /proc/self
  // files then belong to root: it could not write its own maps.
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  if (!write_proc_file("/proc/self/setgroups", "deny"))
    return "setgroups deny: " + errno_text(errno);
  if (!write_proc_file("/proc/self/uid_map", fmt::format("{} {} 1", uid, uid)))
    return "uid_map: " + errno_text(errno);
  if (!write_proc_file("/proc/self/gid_map", fmt::format("{} {} 1", gid, gid)))
    return "gid_map: " + errno_text(errno);
  return "";
}

LayerReport drop_privileges(const IsolationConfig& config, bool in_user_namespace) {
  LayerReport report{std::string(enum_name(Layer::user)), false, ""};
  if (in_user_namespace) {
    drop_bounding_set();
    if (!clear_capabilities()) {
      report.detail = "capset: " + errno_text(errno);
      return report;
    }
    report.detail = fmt::format("user namespace mapping uid {} gid {}; capabilities dropped",
                                getuid(), getgid());
  } else if (geteuid() == 0) {
    drop_bounding_set();
    gid_t gid = config.gid;
    if (setgroups(1, &gid) != 0) return {report.name, false, "setgroups: " + errno_text(errno)};
    if (setresgid(config.gid, config.gid, config.gid) != 0)
      return {report.name, false, "setresgid: " + errno_text(errno)};
    if (setresuid(config.uid, config.uid, config.uid) != 0)
      return {report.name, false, "setresuid: " + errno_text(errno)};
    report.detail = fmt::format("uid {} gid {} (from root)", config.uid, config.gid);
  } else {
    // Neither root nor in a namespace of our own: whatever we are, capabilities must still go.
    drop_bounding_set();
    clear_capabilities();
    report.detail = fmt::format("uid {} (not root; no user namespace)", getuid());
  }
  if (std::string left = capabilities_left(); !left.empty()) {
    report.detail += "; " + left;
    return report;
  }
  if (setuid(0) == 0 || geteuid() == 0) {
    report.detail += "; setuid(0) succeeded";
    return report;
  }
  report.set_up = true;
  report.detail += "; no capability left, setuid(0) refused";
  return report;
}

}  // namespace stitch::sandbox::detail
