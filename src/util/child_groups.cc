// The child-group registry and the signal handler that empties it; see child_groups.h.
#include "util/child_groups.h"

#include <signal.h>
#include <time.h>

#include <array>
#include <atomic>
#include <mutex>

namespace stitch {
namespace {

// 0: a free slot. Slots are claimed with compare-exchange, so registration is lock-free too and a
// handler interrupting it sees either the group or a free slot.
std::array<std::atomic<pid_t>, kMaxChildGroups> groups{};

constexpr int kHandledSignals[] = {SIGINT, SIGTERM, SIGHUP};

void on_fatal_signal(int signal_number) {
  kill_registered_child_groups();
  // SA_RESETHAND restored the default disposition on entry and SA_NODEFER left the signal
  // unblocked: this raise ends the process the way the signal would have.
  raise(signal_number);
}

}  // namespace

void kill_registered_child_groups() {
  bool any = false;
  for (auto& slot : groups) {
    pid_t group = slot.load();
    if (group > 0) any = kill(-group, SIGTERM) == 0 || any;
  }
  if (!any) return;
  timespec grace{0, 100'000'000};
  while (nanosleep(&grace, &grace) != 0) {
  }
  for (auto& slot : groups) {
    pid_t group = slot.load();
    if (group > 0) kill(-group, SIGKILL);
  }
}

void install_child_group_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal_number : kHandledSignals) {
      struct sigaction current {};
      if (sigaction(signal_number, nullptr, &current) != 0) continue;
      if (current.sa_handler != SIG_DFL) continue;  // ignored (nohup), or someone else's handler
      struct sigaction action {};
      action.sa_handler = on_fatal_signal;
      action.sa_flags = SA_RESETHAND | SA_NODEFER;
      sigemptyset(&action.sa_mask);
      sigaction(signal_number, &action, nullptr);
    }
  });
}

void child_group_signals(sigset_t& set) {
  sigemptyset(&set);
  for (int signal_number : kHandledSignals) sigaddset(&set, signal_number);
}

void reset_child_group_handlers() {
  for (int signal_number : kHandledSignals) {
    struct sigaction current {};
    if (sigaction(signal_number, nullptr, &current) == 0 && current.sa_handler == on_fatal_signal)
      signal(signal_number, SIG_DFL);
  }
}

bool register_child_group(pid_t group) {
  for (auto& slot : groups) {
    pid_t expected = 0;
    if (slot.compare_exchange_strong(expected, group)) return true;
  }
  return false;
}

void unregister_child_group(pid_t group) {
  for (auto& slot : groups) {
    pid_t expected = group;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

std::vector<pid_t> registered_child_groups() {
  std::vector<pid_t> result;
  for (auto& slot : groups)
    if (pid_t group = slot.load(); group > 0) result.push_back(group);
  return result;
}

}  // namespace stitch
