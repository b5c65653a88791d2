// The system calls of the seccomp filter (seccomp_filter.h), in two tables: what a CUDA program
// needs after it is loaded (the allowlist), and what is refused in every mode (the denylist).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace stitch::sandbox {

// A condition on the call's first argument, checked by the filter.
enum class ArgCheck : uint8_t {
  none,
  thread_clone,  // clone: CLONE_THREAD set and no namespace flag
  self_pid,      // arg 0 is our own pid (kill, tgkill of our own threads)
  zero,          // arg 0 is 0 (prlimit64 on ourselves)
  unix_domain,   // socket / socketpair: AF_UNIX only
};

struct SyscallRule {
  long nr;
  std::string_view name;
  ArgCheck check = ArgCheck::none;
};

std::span<const SyscallRule> allowed_syscalls();
std::span<const SyscallRule> denied_syscalls();

// The name of a system call of this architecture ("syscall 123" for one in neither table).
std::string syscall_name(long nr);

}  // namespace stitch::sandbox
