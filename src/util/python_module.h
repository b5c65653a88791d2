// Starting a module of the Python harness (python/stitch_harness): which interpreter, where the
// package is, and the one command line and environment every caller uses (the harness's capture,
// the judge, baselines, eval-kb, the reference profile).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "util/process.h"
#include "util/task_limits.h"

namespace stitch {

struct PythonLocation {
  std::string python;                // interpreter with torch
  std::filesystem::path python_dir;  // directory holding stitch_harness/
};

// `python -m <module> args...` with PYTHONPATH pointing at the harness and unbuffered output, and
// the task limits of util/task_limits.h: a caller that sets its own timeout_s caps it with
// task_timeout_s.
ProcessSpec python_module_spec(const PythonLocation& location, const std::string& module,
                               const std::vector<std::string>& args);

}  // namespace stitch
