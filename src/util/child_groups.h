// The registry of live child process groups, so that every child dies with the orchestrator.
// Children lead their own process groups (a timeout kills a child with everything it started), which
// also means a Ctrl-C or a SIGTERM meant for the orchestrator never reaches them. So every group
// started through util/spawn.h is registered here, and the orchestrator's SIGINT, SIGTERM and SIGHUP
// handlers take the registered groups down before the orchestrator dies of the same signal.
// Everything a signal handler touches is a fixed array of atomics: async-signal-safe.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstddef>
#include <vector>

namespace stitch {

// How many groups can be registered at once; a group beyond that is not registered (it still gets
// the parent-death signal, util/spawn.h).
constexpr size_t kMaxChildGroups = 1024;

// Installs the SIGINT/SIGTERM/SIGHUP handlers (once per process; a signal whose disposition is
// SIG_IGN, as under nohup, stays ignored). The handler sends SIGTERM to every registered group,
// gives them 0.1 s (a child that is itself an orchestrator takes its own groups down then), sends
// SIGKILL, restores the default disposition and re-raises the signal.
void install_child_group_handlers();

// The signals the handlers take (SIGINT, SIGTERM, SIGHUP), for blocking them around fork.
void child_group_signals(sigset_t& set);
// In a forked child before exec: our handlers back to SIG_DFL (async-signal-safe).
void reset_child_group_handlers();

// False when the registry is full.
bool register_child_group(pid_t group);
void unregister_child_group(pid_t group);

// The registered groups now (for tests and diagnostics).
std::vector<pid_t> registered_child_groups();

// What the handler does, without the re-raise: TERM, the grace, KILL to every registered group.
// Async-signal-safe.
void kill_registered_child_groups();

}  // namespace stitch
