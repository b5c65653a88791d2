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
IsolationConfig runner_isolation(const RunnerView& view);

}  // namespace stitch::sandbox
