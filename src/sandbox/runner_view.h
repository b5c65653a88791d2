// The isolation of stitch-runner's worker (the process that loads the candidate): what its
// filesystem view holds so that CUDA and the program still load, and nothing else.
#pragma once

#include <filesystem>
#include <vector>

#include "sandbox/isolation.h"

namespace stitch::sandbox {

struct RunnerView {
  std::filesystem::path work_dir;                      // the attempt's temp dir: writable, the cwd
  std::filesystem::path program;                       // the candidate .so: read-only
  std::vector<std::filesystem::path> extra_read_only;  // the CUDA toolkit's lib dir if elsewhere
  std::vector<int> keep_fds;                           // the supervisor's channel
};

// Read-only: the program; /usr, /lib, /lib64, /etc/ld.so.cache, /opt (system and NVIDIA libraries:
// libcuda and the driver's JIT libraries are found through ld.so.cache); the directories of every
// library this process has loaded (libcudart, the runner's own) and of LD_LIBRARY_PATH; `extra`.
// Devices: /dev/null, /dev/zero, /dev/urandom, /dev/random, every /dev/nvidia* and
// /dev/nvidia-caps/*. A fresh /proc (the driver reads /proc/driver/nvidia and /proc/self/maps),
// /sys read-only (the driver reads PCI topology), a PID namespace, the uid drop, Landlock.
// Also read-only: the directories of the loader's configuration (loader_config_dirs) and the
// targets of symbolic links that lead out of the view on the way to any read-only path or loader
// directory (link_targets_outside).
IsolationConfig runner_isolation(const RunnerView& view);

// The directories the dynamic loader's cache (ld.so.cache) is built from: the lines of `conf` and
// of the files its `include` lines name (glob patterns, relative to conf's directory when not
// absolute), comments and blank lines left out, in order, without repeats.
std::vector<std::filesystem::path> loader_config_dirs(
    const std::filesystem::path& conf = "/etc/ld.so.conf");

// The targets of the symbolic links met on the way to `path` (each hop, relative ones made
// absolute) that no path of `roots` contains: a view of only `roots` cannot resolve `path`
// without them. On the H200 machine the loader's cache names /usr/local/cuda/targets/..., and
// /usr/local/cuda -> /etc/alternatives/cuda -> /usr/local/cuda-13.0: a view of /usr alone cannot
// load cuBLASLt. Bind the targets (a bind follows the rest of the chain).
std::vector<std::filesystem::path> link_targets_outside(
    const std::filesystem::path& path, const std::vector<std::filesystem::path>& roots);

}  // namespace stitch::sandbox
