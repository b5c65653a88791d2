// The seccomp program and its installation; see seccomp_filter.h.
#include "sandbox/seccomp_filter.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "sandbox/syscall_table.h"

namespace stitch::sandbox {
namespace {

// Counters per call number (x86-64 and aarch64 numbers stay below this), plus one for others.
constexpr int kCounted = 512;
std::array<std::atomic<uint64_t>, kCounted + 1> refusal_counts{};

#if defined(__x86_64__) || defined(__aarch64__)

#if defined(__x86_64__)
constexpr uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#else
constexpr uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#endif

constexpr uint32_t kNamespaceFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                                     CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;
constexpr uint32_t kArg0Low = offsetof(seccomp_data, args[0]);  // little endian: the low word

void on_sigsys(int, siginfo_t* info, void* context) {
  long nr = info->si_syscall;
  refusal_counts[nr >= 0 && nr < kCounted ? nr : kCounted].fetch_add(1, std::memory_order_relaxed);
  auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#else
  uc->uc_mcontext.regs[0] = static_cast<uint64_t>(-EPERM);
#endif
}

class Program {
 public:
  void add(sock_filter instruction) { code_.push_back(instruction); }
  void load_nr() { add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr))); }
  // if (nr == `nr`) return `action`;
  void on_call(long nr, uint32_t action) {
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    add(BPF_STMT(BPF_RET | BPF_K, action));
  }
  // if (nr == `nr`) return arg 0 passes `check` ? ALLOW : TRAP; (A holds nr again after it)
  void on_checked_call(long nr, ArgCheck check, int self_pid) {
    std::vector<sock_filter> test;
    switch (check) {
      case ArgCheck::thread_clone:
        test = {BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_THREAD, 0, 2),
                BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, kNamespaceFlags, 1, 0)};
        break;
      case ArgCheck::self_pid:
        test = {BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(self_pid), 0, 1)};
        break;
      case ArgCheck::zero:
        test = {BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1)};
        break;
      case ArgCheck::unix_domain:
        test = {BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1)};
        break;
      case ArgCheck::none:
        on_call(nr, SECCOMP_RET_ALLOW);
        return;
    }
    // The test's last instruction jumps to ALLOW when true, to TRAP when false (offsets above).
    add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0,
                 static_cast<uint8_t>(test.size() + 3)));
    add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0Low));
    for (const auto& instruction : test)
      add(instruction);
    add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
    load_nr();
  }
  std::vector<sock_filter> take() { return std::move(code_); }

 private:
  std::vector<sock_filter> code_;
};

#endif

}  // namespace

std::vector<sock_filter> build_seccomp_program(SeccompMode mode, int self_pid) {
#if defined(__x86_64__) || defined(__aarch64__)
  Program program;
  program.add(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  program.add(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0));
  program.add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));  // foreign ABI: never expected
  program.load_nr();
#if defined(__x86_64__)
  // x32 system calls reach the same kernel entry points under other numbers.
  program.add(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  program.add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
#endif
  for (const auto& rule : denied_syscalls())
    program.on_call(rule.nr, SECCOMP_RET_TRAP);
  program.on_call(SYS_clone3, SECCOMP_RET_ERRNO | ENOSYS);
  if (mode == SeccompMode::denylist) {
    program.on_checked_call(SYS_clone, ArgCheck::thread_clone, self_pid);
    program.add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
    return program.take();
  }
  for (const auto& rule : allowed_syscalls())
    program.on_checked_call(rule.nr, rule.check, self_pid);
  program.add(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
  return program.take();
#else
  (void)mode;
  (void)self_pid;
  return {};
#endif
}

LayerReport install_seccomp_filter(SeccompMode mode) {
  LayerReport report{std::string(enum_name(Layer::seccomp)), false, ""};
  std::vector<sock_filter> program = build_seccomp_program(mode, getpid());
  if (program.empty()) return {report.name, false, "no filter for this architecture"};
#if defined(__x86_64__) || defined(__aarch64__)
  struct sigaction action {};
  action.sa_sigaction = on_sigsys;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGSYS, &action, nullptr) != 0)
    return {report.name, false, fmt::format("sigaction(SIGSYS): {}", std::strerror(errno))};
#endif
  sock_fprog fprog{static_cast<unsigned short>(program.size()), program.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
    return {report.name, false, fmt::format("PR_SET_NO_NEW_PRIVS: {}", std::strerror(errno))};
  // TSYNC: CUDA's threads exist already and must carry the filter too.
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) != 0)
    return {report.name, false,
            fmt::format("seccomp(SET_MODE_FILTER, TSYNC): {}", std::strerror(errno))};
  report.set_up = true;
  report.detail = mode == SeccompMode::allowlist
                      ? fmt::format("allowlist: {} calls allowed, the rest refused (EPERM)",
                                    allowed_syscalls().size())
                      : fmt::format(
                            "denylist: {} calls and process clones refused (EPERM), the "
                            "rest allowed",
                            denied_syscalls().size());
  return report;
}

std::vector<SyscallRefusal> seccomp_refusals() {
  std::vector<SyscallRefusal> refusals;
  for (int nr = 0; nr <= kCounted; ++nr) {
    uint64_t count = refusal_counts[nr].load(std::memory_order_relaxed);
    if (count == 0) continue;
    refusals.push_back({nr, nr < kCounted ? syscall_name(nr) : "x32 or unknown", count});
  }
  return refusals;
}

}  // namespace stitch::sandbox
