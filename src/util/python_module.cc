// python_module_spec; see python_module.h.
#include "util/python_module.h"

#include <cstdlib>
#include <string>

#include "util/task_limits.h"

namespace stitch {

ProcessSpec python_module_spec(const PythonLocation& location, const std::string& module,
                               const std::vector<std::string>& args) {
  ProcessSpec spec;
  spec.argv = {location.python, "-m", module};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  std::string python_path = location.python_dir.string();
  if (const char* existing = std::getenv("PYTHONPATH")) python_path += std::string(":") + existing;
  spec.env["PYTHONPATH"] = python_path;
  spec.env["PYTHONUNBUFFERED"] = "1";
  // Task files are code: the harness limits its own memory and ties its group's life to ours
  // (python/stitch_harness/task_limits.py); the caller caps its time with task_timeout_s.
  spec.env["STITCH_TASK_MEMORY_BYTES"] = std::to_string(task_memory_bytes());
  spec.env["STITCH_TASK_GROUP_GUARD"] = "1";
  spec.timeout_s = task_timeout_s(0);
  return spec;
}

}  // namespace stitch
