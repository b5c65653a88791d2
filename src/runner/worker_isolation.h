// The worker's isolation (src/sandbox/isolation.h) as stitch-runner applies it: the view of
// sandbox/runner_view.h, less the layers the orchestrator waived (--insecure-sandbox, which the
// runner then does not set up at all: the escape hatch for a machine where one of them breaks
// CUDA), and without a PID namespace of its own (the supervisor decides that one: the worker
// either shares the judge's, for its CUDA IPC handles, or is PID 1 of its own with --self-test).
#pragma once

#include <filesystem>
#include <vector>

#include "sandbox/isolation.h"
#include "sandbox/layers.h"

namespace stitch::runner {

sandbox::IsolationConfig worker_isolation(const std::filesystem::path& work_dir,
                                          const std::filesystem::path& program, int channel_fd,
                                          const sandbox::InsecureLayers& waived);

}  // namespace stitch::runner
