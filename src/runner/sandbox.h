// The runner's sandbox, set up before the candidate is loaded (HACKS.md rows 8, 20, 21, 27): an
// own empty working directory, resource limits, death with the parent, a network namespace where
// the OS permits one, an environment without the judge's traces, and (after CUDA is initialised)
// a seccomp filter (src/sandbox/seccomp_filter.h: an allowlist by default) that lets threads
// start.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "sandbox/seccomp_filter.h"
#include "util/result.h"

namespace stitch::runner {

struct SandboxOptions {
  std::filesystem::path work_dir;  // empty: a fresh directory under $TMPDIR or /tmp
  uint64_t max_file_bytes = 256ull << 20;
  uint64_t max_open_files = 1024;
  bool isolate_network = true;
  // A profiler (Nsight Compute) injected itself before main: its descriptors to the profiler
  // process stay open, LD_PRELOAD stays set and the initial environment block is not wiped (the
  // runner died of SIGSEGV under ncu without this). Only for profiling a program that was already
  // verified; never in verification.
  bool under_profiler = false;
  // Values containing one of these paths are removed from the environment.
  std::vector<std::string> private_paths;
  // The channel to the supervisor (runner/supervisor.h): left open. Only 3 is supported (the
  // worker puts it there), so one close_range still closes everything above it.
  int keep_fd = -1;
};

struct SandboxReport {
  std::filesystem::path work_dir;
  bool created_work_dir = false;  // the runner made it and removes it at exit
  bool network_namespace = false;
  std::string network_detail;                    // how it was made, or why not
  std::vector<std::string> removed_environment;  // names
  std::vector<std::string> notes;                // limits that could not be applied, ...
};

// Applies everything but seccomp. An Error only when the working directory cannot be set up.
Result<SandboxReport> enter_sandbox(const SandboxOptions& options, int argc, char** argv);

// Removes the working directory if the runner created it.
void leave_sandbox(const SandboxReport& report);

// A fresh directory under $TMPDIR or /tmp (the default working directory).
Result<std::filesystem::path> create_temp_work_dir();

// Children (and, through the subreaper flag, orphaned descendants) of this process, as /proc
// numbers them (the host's numbers when /proc belongs to an ancestor PID namespace).
std::vector<int> list_child_processes();
// Kills the given processes (our own descendants, as list_child_processes numbers them) with
// SIGKILL and reaps them.
void kill_processes(const std::vector<int>& pids);

// Thread ids of this process (/proc/self/task) and a thread's name.
std::vector<int> list_threads();
std::string thread_name(int tid);
// Ids in `after` (sorted) that are not in `before` (sorted).
std::vector<int> threads_started(const std::vector<int>& after, const std::vector<int>& before);
// "tid (name), ..." for a finding's detail.
std::string describe_threads(const std::vector<int>& tids);

struct SeccompReport {
  bool installed = false;
  std::string detail;
};
// The filter of src/sandbox/seccomp_filter.h for every thread, present and future (TSYNC): in
// allowlist mode only what a CUDA program needs passes; in both modes exec, process clones and the
// denylist (ptrace, setns, mount, bpf, ...) are refused. Refused calls return EPERM and are counted
// (seccomp_refusals); the detail names the mode.
SeccompReport install_process_filter(sandbox::SeccompMode mode = sandbox::SeccompMode::allowlist);

struct SeccompRefusal {
  long syscall_number;
  std::string name;  // "ptrace", "syscall 123" for one in neither table
  uint64_t count;
};
std::vector<SeccompRefusal> seccomp_refusals();

}  // namespace stitch::runner
