// Limits on the processes that run task files: capture, reference outputs and timings, the judge,
// baselines, eval-kb, the reference profile (every `python -m stitch_harness...`, started through
// util/python_module.h). A task file is trusted code, like a build script (it runs in Python with
// the user's rights), but a runaway one must not take the machine: each such process gets a memory
// limit and a wall-clock limit, and its process group dies with the orchestrator.
//
// Memory is RLIMIT_DATA, applied by the harness itself as it starts (python/stitch_harness/
// task_limits.py), not RLIMIT_AS: a CUDA process reserves far more address space than it uses (the
// driver maps a unified virtual range the size of host plus device memory), so an address-space
// limit breaks cuInit, while RLIMIT_DATA counts only private writable memory (the heap, PyTorch's
// CPU tensors) and not those PROT_NONE reservations nor device memory. The default is 3/4 of the
// machine's memory (at least 8 GiB).
//
// Set once, from the command line (--task-timeout, --task-memory on every subcommand), before any
// such process starts; read wherever one is started.
#pragma once

#include <cstdint>
#include <optional>

namespace stitch {

struct TaskLimits {
  double timeout_s = 0;                  // 0: each use's own limit; else the most any may run
  std::optional<uint64_t> memory_bytes;  // nullopt: default_task_memory_bytes(); 0: no limit
};

void set_task_limits(const TaskLimits& limits);
TaskLimits task_limits();

// A use's own wall-clock limit (0: none), capped by --task-timeout.
double task_timeout_s(double own_s);

// The RLIMIT_DATA the harness applies to itself; 0: none.
uint64_t task_memory_bytes();

// 3/4 of MemTotal (/proc/meminfo), at least 8 GiB; 0 when the machine's memory cannot be read.
uint64_t default_task_memory_bytes();

}  // namespace stitch
