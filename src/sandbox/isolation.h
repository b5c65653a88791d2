// Isolation of a process that is about to load untrusted code (a candidate program, nvcc): called
// in a fresh child, still single-threaded, before anything untrusted is loaded. Each layer reports
// {name, set_up, detail} (layers.h); nothing here decides whether a missing layer is fatal — the
// orchestrator does, from the reports (fail closed).
//
// Order (each step needs what the one before left):
//   1. descriptors      close everything above 2 but the keep-list (nothing leaks into the rest)
//   2. namespaces       unshare mount / IPC / network (and a user namespace first when not root: it
//                       grants the capabilities the other steps need, inside it only); a PID
//                       namespace forks: the caller continues as its PID 1, the parent only waits
//   3. mount_namespace  private propagation, a tmpfs root holding bind mounts of the writable dir
//                       (read-write), the read-only paths, the device nodes, a fresh /proc
//                       (hidepid=invisible), /sys read-only if asked; pivot_root, old root
//                       detached, root remounted read-only, chdir to the writable dir. Needs
//                       CAP_SYS_ADMIN: before the uid drop.
//   4. no_new_privs     before Landlock (which requires it without CAP_SYS_ADMIN) and before exec
//   5. landlock         write only under the writable dir, read the allowed paths, no TCP; after
//                       the mounts, so its rules name the paths of the new view
//   6. user             root: setgroups / setresgid / setresuid to the unprivileged ids, bounding
//                       set dropped first; in a user namespace: every capability dropped. Then
//                       verified: no capability left and setuid(0) fails. Last, because every
//                       step above needs privilege.
// The seccomp filter (seccomp_filter.h) comes later, after CUDA is initialised.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/layers.h"

namespace stitch::sandbox {

struct IsolationConfig {
  // The only place the process may write (the attempt's temp dir); made the working directory.
  std::filesystem::path writable_dir;
  // Files or directories visible read-only at their own paths (libraries, the program .so, toolkit
  // dirs). A path that does not exist is skipped and named in the mount layer's detail.
  std::vector<std::filesystem::path> read_only_paths;
  // Device nodes bound read-write at their own paths (/dev/null, /dev/nvidia0, ...); missing ones
  // are skipped.
  std::vector<std::filesystem::path> devices;
  bool mount_proc = true;      // a fresh /proc (hidepid=invisible) in the new view
  bool sys_read_only = false;  // /sys bound read-only (the NVIDIA driver reads it)
  bool tmp_tmpfs = false;      // a private, empty, writable tmpfs on /tmp (the compiler's)
  bool new_mount_namespace = true;
  bool new_ipc_namespace = true;
  bool new_network_namespace = true;
  // Fork into a new PID namespace (the caller continues as its PID 1). A process that is PID 1
  // already (its spawner made the namespace) reports the layer as set up without forking.
  bool new_pid_namespace = false;
  bool drop_privileges = true;  // the `user` layer
  // Ids to drop to when root; ignored otherwise (a user namespace mapping the caller's own ids).
  uid_t uid = 65534;
  gid_t gid = 65534;
  bool landlock = true;
  bool no_new_privs = true;
  // Close every descriptor above 2 but keep_fds. Off for a child about to exec (a spawner's own
  // close-on-exec pipes must stay open until exec).
  bool close_descriptors = true;
  std::vector<int> keep_fds;  // kept open besides 0, 1, 2 (a pipe to the supervisor)
};

// Applies the layers in the documented order and reports each, in that order. Never throws and
// never exits (but the parent of a new PID namespace, which exits with its child's status).
// The process is left in whatever state the steps reached: a caller that requires a layer checks
// its report (find_layer_gaps) before loading anything untrusted.
std::vector<LayerReport> apply_isolation(const IsolationConfig& config);

// The report of one layer in `reports`, or nullptr.
const LayerReport* find_layer(const std::vector<LayerReport>& reports, Layer layer);

}  // namespace stitch::sandbox
