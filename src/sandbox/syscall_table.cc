// The two system-call tables; see syscall_table.h. The allowlist is built from what glibc, the C++
// runtime, the CUDA runtime and driver (libcudart, libcuda: ioctl on /dev/nvidia*, mmap of device
// memory, helper threads polling eventfds), cuBLAS/cuDNN and CUPTI are known to call; the lead
// checks it on the GPU (a refusal is reported by name as a finding). Legacy x86-64 spellings of
// the same calls are listed beside their modern ones.
#include "sandbox/syscall_table.h"

#include <sys/syscall.h>

#include <fmt/format.h>

namespace stitch::sandbox {
namespace {

// The groups read better packed, with one comment each.
// clang-format off
#define CALL(name) SyscallRule{SYS_##name, #name, ArgCheck::none}
#define CALL_IF(name, check) SyscallRule{SYS_##name, #name, ArgCheck::check}
constexpr SyscallRule kAllowed[] = {
    // Memory: the driver maps device memory and pinned host buffers; allocators grow the heap.
    CALL(mmap), CALL(munmap), CALL(mprotect), CALL(mremap), CALL(madvise), CALL(brk), CALL(msync),
    CALL(mincore), CALL(mlock), CALL(munlock), CALL(membarrier), CALL(get_mempolicy),
    CALL(set_mempolicy), CALL(mbind), CALL(memfd_create), CALL(move_pages),
    // Files, through the descriptors the mount view and Landlock allow: reading libraries,
    // /proc/self/maps, /proc/driver/nvidia; writing inside the writable dir.
    CALL(read), CALL(write), CALL(readv), CALL(writev), CALL(pread64), CALL(pwrite64), CALL(preadv),
    CALL(pwritev), CALL(preadv2), CALL(pwritev2), CALL(lseek), CALL(close), CALL(openat),
    CALL(newfstatat), CALL(fstat), CALL(statx), CALL(fstatfs), CALL(statfs), CALL(faccessat),
    CALL(faccessat2), CALL(readlinkat), CALL(getdents64), CALL(fcntl), CALL(dup), CALL(dup3),
    CALL(pipe2), CALL(ioctl), CALL(fsync), CALL(fdatasync), CALL(ftruncate), CALL(fallocate),
    CALL(fadvise64), CALL(flock), CALL(getcwd), CALL(chdir), CALL(fchdir), CALL(umask),
    CALL(unlinkat), CALL(renameat), CALL(renameat2), CALL(mkdirat), CALL(fchmod), CALL(eventfd2),
    CALL(signalfd4), CALL(copy_file_range), CALL(sendfile), CALL(truncate), CALL(utimensat),
    // Local IPC the driver uses (the IPC namespace keeps it private): System V shared memory,
    // unix sockets (AF_UNIX only; the network namespace has no route anywhere anyway).
    CALL(shmget), CALL(shmat), CALL(shmdt), CALL(shmctl), CALL_IF(socket, unix_domain),
    CALL_IF(socketpair, unix_domain), CALL(connect), CALL(sendmsg), CALL(recvmsg), CALL(sendto),
    CALL(recvfrom), CALL(shutdown), CALL(getsockopt), CALL(setsockopt), CALL(getsockname),
    CALL(getpeername),
    // Threads (CUDA's helper threads, the program's own), never processes.
    CALL_IF(clone, thread_clone), CALL(exit), CALL(exit_group), CALL(set_tid_address),
    CALL(set_robust_list), CALL(get_robust_list), CALL(futex), CALL(futex_waitv), CALL(rseq),
    CALL(gettid), CALL(getpid), CALL(getppid), CALL_IF(tgkill, self_pid), CALL_IF(kill, self_pid),
    CALL(wait4), CALL(waitid), CALL(prctl), CALL_IF(prlimit64, zero), CALL(getrlimit),
    CALL(setrlimit), CALL(getrusage), CALL(getcpu),
    // Scheduling of our own threads.
    CALL(sched_yield), CALL(sched_getaffinity), CALL(sched_setaffinity), CALL(sched_getparam),
    CALL(sched_setparam), CALL(sched_getscheduler), CALL(sched_setscheduler),
    CALL(sched_get_priority_max), CALL(sched_get_priority_min), CALL(sched_getattr),
    CALL(sched_setattr), CALL(getpriority), CALL(setpriority),
    // Signals of our own process (SIGSYS of this filter, the program's handlers).
    CALL(rt_sigaction), CALL(rt_sigprocmask), CALL(rt_sigreturn), CALL(rt_sigtimedwait),
    CALL(rt_sigsuspend), CALL(rt_sigpending), CALL(sigaltstack), CALL(restart_syscall),
    // Clocks, sleeps and timers (timing loops, the driver's waits).
    CALL(clock_gettime), CALL(clock_getres), CALL(clock_nanosleep), CALL(nanosleep),
    CALL(gettimeofday), CALL(times), CALL(getitimer), CALL(setitimer), CALL(timer_create),
    CALL(timer_settime), CALL(timer_gettime), CALL(timer_getoverrun), CALL(timer_delete),
    CALL(timerfd_create), CALL(timerfd_settime), CALL(timerfd_gettime),
    // Waiting on descriptors (the driver's event threads).
    CALL(ppoll), CALL(pselect6), CALL(epoll_create1), CALL(epoll_ctl), CALL(epoll_pwait),
    CALL(epoll_pwait2),
    // Who and where we are.
    CALL(getuid), CALL(geteuid), CALL(getgid), CALL(getegid), CALL(getgroups), CALL(getresuid),
    CALL(getresgid), CALL(getpgid), CALL(getsid), CALL(uname), CALL(sysinfo), CALL(getrandom),
    CALL(capget),
#if defined(__x86_64__)
    // x86-64's older spellings of calls above.
    CALL(open), CALL(stat), CALL(lstat), CALL(access), CALL(readlink), CALL(getdents), CALL(dup2),
    CALL(pipe), CALL(poll), CALL(select), CALL(epoll_create), CALL(epoll_wait), CALL(eventfd),
    CALL(unlink), CALL(rename), CALL(mkdir), CALL(rmdir), CALL(time), CALL(alarm), CALL(getpgrp),
    CALL(arch_prctl),
#endif
};

constexpr SyscallRule kDenied[] = {
    // Other processes' memory and descriptors.
    CALL(ptrace), CALL(process_vm_readv), CALL(process_vm_writev), CALL(kcmp), CALL(pidfd_open),
    CALL(pidfd_getfd), CALL(pidfd_send_signal), CALL(process_madvise), CALL(rt_sigqueueinfo),
    CALL(rt_tgsigqueueinfo), CALL(tkill),
    // Leaving the namespaces and the filesystem view.
    CALL(setns), CALL(unshare), CALL(mount), CALL(umount2), CALL(pivot_root), CALL(chroot),
    CALL(open_by_handle_at), CALL(name_to_handle_at), CALL(fsopen), CALL(fsconfig), CALL(fsmount),
    CALL(fspick), CALL(move_mount), CALL(open_tree), CALL(mount_setattr),
    // Kernel attack surface a program never needs.
    CALL(bpf), CALL(perf_event_open), CALL(keyctl), CALL(add_key), CALL(request_key),
    CALL(io_uring_setup), CALL(io_uring_enter), CALL(io_uring_register), CALL(userfaultfd),
    CALL(personality), CALL(kexec_load), CALL(init_module), CALL(finit_module), CALL(delete_module),
    CALL(reboot), CALL(swapon), CALL(swapoff), CALL(acct), CALL(quotactl), CALL(syslog),
    CALL(vhangup),
    // New programs and processes (clone without CLONE_THREAD is refused by its own rule).
    CALL(execve), CALL(execveat),
#if defined(__x86_64__)
    CALL(fork), CALL(vfork), CALL(iopl), CALL(ioperm),
#endif
};
// clang-format on

#undef CALL
#undef CALL_IF

}  // namespace

std::span<const SyscallRule> allowed_syscalls() {
  return kAllowed;
}
std::span<const SyscallRule> denied_syscalls() {
  return kDenied;
}

std::string syscall_name(long nr) {
  if (nr == SYS_clone3) return "clone3";
  for (auto table : {allowed_syscalls(), denied_syscalls()})
    for (const auto& rule : table)
      if (rule.nr == nr) return std::string(rule.name);
  return fmt::format("syscall {}", nr);
}

}  // namespace stitch::sandbox
