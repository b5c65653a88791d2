// PID namespaces for the processes of one verification (docs/verify-protocol.md "Process layout").
// A child started with `PidNamespace::own()` is PID 1 of a fresh namespace; one started with
// `PidNamespace::join(pid)` lives in the namespace of `pid` (an earlier child of ours). The
// orchestrator starts the judge with `own()` and the runner with `join(judge pid)`: the two share
// a namespace (legacy CUDA IPC handles open only between processes of one PID namespace), and
// neither sees the orchestrator or any other verification's processes.
//
// How spawn_child (util/spawn.h) uses these, and what each mode implies:
//   own   the child is created by clone(CLONE_NEWPID) instead of fork. As PID 1 it ignores every
//         signal it has no handler for, also from us, except SIGKILL: Python installs none for
//         SIGTERM, so a stop escalates to SIGKILL after its grace (ChildProcess::stop does), and
//         its parent-death signal is SIGKILL. When it exits, the kernel kills everything else in
//         its namespace: the runner never outlives the judge. Orphans in the namespace are
//         re-parented to it (Python reaps only its own subprocesses; zombies last until it exits,
//         which is the end of one verification).
//   join  setns(CLONE_NEWPID) changes only where a process's *children* go, so the child forks
//         once more: the grandchild execs the command inside the namespace, and the child waits
//         for it and ends the same way (the same exit code, or the same signal re-raised, so the
//         orchestrator's crash classification by signal still holds). The child keeps the
//         orchestrator's group signals blocked while it waits, so a SIGTERM to the group ends the
//         grandchild first and reaches the child as the grandchild's end.
// Both need CAP_SYS_ADMIN (root, or a user namespace we own); can_create_pid_namespace() asks.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/enum_names.h"
#include "util/result.h"

namespace stitch {

enum class PidNamespaceMode : uint8_t {
  inherit,  // the parent's namespace (the default)
  own,      // a new namespace; the child is its PID 1
  join,     // the namespace of `target`
};
inline constexpr std::array<std::string_view, 3> kPidNamespaceModeNames = {"inherit", "own",
                                                                           "join"};
constexpr const auto& enum_names(PidNamespaceMode) {
  return kPidNamespaceModeNames;
}
static_assert(names_every_enumerator(PidNamespaceMode::join));

struct PidNamespace {
  PidNamespaceMode mode = PidNamespaceMode::inherit;
  pid_t target = -1;  // join: a process in the namespace (our child: its pid cannot be reused)

  static PidNamespace inherit() { return {}; }
  static PidNamespace own() { return {PidNamespaceMode::own, -1}; }
  static PidNamespace join(pid_t pid) { return {PidNamespaceMode::join, pid}; }
};

// "pid:[4026531836]": the namespace of `pid` (0: this process) as /proc names it; empty when it
// cannot be read. Equal strings mean the same namespace.
std::string pid_namespace_id(pid_t pid = 0);

// Whether this process may create PID namespaces and mount their /proc (asked once, by a
// throwaway child; cached).
bool can_create_pid_namespace();

// /proc may belong to an ancestor namespace (the runner joins the judge's namespace but keeps the
// host's /proc): its pids are not the ones kill() and waitpid() take here.
// Our own pid as /proc numbers it (readlink /proc/self); getpid() when that fails.
pid_t proc_self_pid();
// A process /proc calls `proc_pid` (ours or deeper in our namespace), as this process's namespace
// numbers it (the NSpid entry at our depth); -1 when it is gone or outside our namespace.
pid_t pid_in_own_namespace(pid_t proc_pid);

// ---- used by spawn_child (util/spawn.cc) ------------------------------------------------------

// Before fork: for `join`, a close-on-exec descriptor of the target's namespace (/proc/PID/ns/pid);
// -1 otherwise. An Error when the target's namespace cannot be opened.
Result<int> open_pid_namespace(const PidNamespace& pid_namespace);

// fork(), or for `own` clone(CLONE_NEWPID | SIGCHLD). The child of the clone must keep to
// async-signal-safe system calls until exec (glibc's fork handlers did not run, and its cached
// thread id is the parent's: no raise(), no pthread calls).
pid_t fork_into(const PidNamespace& pid_namespace);

// In the forked child, signals blocked, before exec: joins the namespace `namespace_fd` and forks
// once more. Returns 0 in the grandchild (which goes on to exec); in the child it never returns:
// it closes `report_fd`, waits for the grandchild and ends as it did. Returns an errno value when
// setns or fork failed (nothing was forked).
int enter_pid_namespace(int namespace_fd, int report_fd);

// In a child that is in a PID namespace other than its parent's (after fork_into for `own`, after
// enter_pid_namespace for `join`), before exec: a private mount namespace whose /proc is that PID
// namespace's own. With the parent's /proc, /proc/<getpid()> names another process and the CUDA
// driver's cuInit fails (cudaErrorOperatingSystem; seen on the H200 machine). Returns an errno
// value on failure.
int mount_own_proc();

}  // namespace stitch
