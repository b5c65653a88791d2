// The seccomp filter of a sandboxed process, installed after CUDA is initialised (the driver opens
// its devices and starts its threads first) and before the candidate runs, on every thread (TSYNC).
//
// Two modes. `allowlist` (the default): only the calls of syscall_table.cc's allowlist pass,
// clone only with CLONE_THREAD and no namespace flag, socket only AF_UNIX, kill/tgkill only of our
// own pid; everything else is refused. `denylist` (a fallback for a GPU where CUDA needs a call
// the allowlist lacks, until it is added): only the denylist and process clones are refused. In
// both, clone3 returns ENOSYS (its flags live in memory the filter cannot read; glibc falls back to
// clone), a foreign architecture kills the process, and every refusal traps into a SIGSYS handler
// that counts it by call and makes it return EPERM — never a kill, so the runner reports it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <linux/filter.h>

#include "sandbox/layers.h"
#include "util/enum_names.h"

namespace stitch::sandbox {

enum class SeccompMode : uint8_t { allowlist, denylist };
inline constexpr std::array<std::string_view, 2> kSeccompModeNames = {"allowlist", "denylist"};
constexpr const auto& enum_names(SeccompMode) {
  return kSeccompModeNames;
}
static_assert(names_every_enumerator(SeccompMode::denylist));

// The BPF program for `mode`; `self_pid` is the pid kill/tgkill may target. Empty on an
// architecture the filter does not know (x86-64 and aarch64 only).
std::vector<sock_filter> build_seccomp_program(SeccompMode mode, int self_pid);

// Installs the SIGSYS handler and the filter (with no_new_privs) for every thread. The `seccomp`
// layer's report: its detail names the mode.
LayerReport install_seccomp_filter(SeccompMode mode);

struct SyscallRefusal {
  long nr;
  std::string name;
  uint64_t count;
};
// The calls refused so far in this process, by call (async-signal-safe counters).
std::vector<SyscallRefusal> seccomp_refusals();

}  // namespace stitch::sandbox
