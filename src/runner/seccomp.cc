// The seccomp filter of the sandbox (sandbox.h): no new processes and no exec once the candidate
// can run, while threads (clone with CLONE_THREAD) still start, because CUDA and its libraries need
// them. Refusals trap into a SIGSYS handler that counts them and makes the call return EPERM, so
// an attempt is reported (hidden_work) instead of killing the runner.
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>

#include "runner/sandbox.h"

namespace stitch::runner {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
constexpr std::array<long, 4> kTrapped = {SYS_execve, SYS_execveat, SYS_fork, SYS_vfork};
#elif defined(__aarch64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
constexpr std::array<long, 2> kTrapped = {SYS_execve, SYS_execveat};
#endif

#if defined(__x86_64__) || defined(__aarch64__)

// Slot per trapped call, plus one for clone; written from the signal handler (lock-free atomics).
constexpr int kSlots = kTrapped.size() + 1;
std::array<std::atomic<uint64_t>, kSlots> refusal_counts{};

int slot_of(long nr) {
  for (size_t i = 0; i < kTrapped.size(); ++i)
    if (kTrapped[i] == nr) return static_cast<int>(i);
  return kSlots - 1;  // clone
}

void on_sigsys(int, siginfo_t* info, void* context) {
  refusal_counts[slot_of(info->si_syscall)].fetch_add(1, std::memory_order_relaxed);
  auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#else
  uc->uc_mcontext.regs[0] = static_cast<uint64_t>(-EPERM);
#endif
}

#endif

}  // namespace

SeccompReport install_process_filter() {
  SeccompReport report;
#if defined(__x86_64__) || defined(__aarch64__)
  struct sigaction action {};
  action.sa_sigaction = on_sigsys;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSYS, &action, nullptr) != 0) {
    report.detail = fmt::format("sigaction(SIGSYS): {}", std::strerror(errno));
    return report;
  }
  constexpr uint32_t kArgFlagsLow = offsetof(seccomp_data, args[0]);  // little endian: low word
  std::vector<sock_filter> program = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),  // foreign ABI: never expected
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
  };
#if defined(__x86_64__)
  // x32 system calls reach the same kernel entry points under other numbers.
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM));
#endif
  for (long nr : kTrapped) {
    program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
  }
  // clone3 passes its flags in memory the filter cannot read; ENOSYS makes glibc fall back to
  // clone, whose flags it can.
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 1, 0));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  program.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArgFlagsLow));
  program.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 1));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));

  sock_fprog fprog{static_cast<unsigned short>(program.size()), program.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    report.detail = fmt::format("PR_SET_NO_NEW_PRIVS: {}", std::strerror(errno));
    return report;
  }
  // TSYNC: CUDA's threads exist already and must carry the filter too.
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) != 0) {
    report.detail = fmt::format("seccomp(SET_MODE_FILTER, TSYNC): {}", std::strerror(errno));
    return report;
  }
  report.installed = true;
  report.detail = "fork, vfork, execve, execveat and process clones refused (EPERM)";
#else
  report.detail = "seccomp filter not implemented for this architecture";
#endif
  return report;
}

std::vector<SeccompRefusal> seccomp_refusals() {
  std::vector<SeccompRefusal> refusals;
#if defined(__x86_64__) || defined(__aarch64__)
  for (int i = 0; i < kSlots; ++i) {
    uint64_t count = refusal_counts[i].load(std::memory_order_relaxed);
    if (count == 0) continue;
    long nr = i < static_cast<int>(kTrapped.size()) ? kTrapped[i] : SYS_clone;
    refusals.push_back({nr, count});
  }
#endif
  return refusals;
}

}  // namespace stitch::runner
