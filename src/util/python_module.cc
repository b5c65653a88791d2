// python_module_spec; see python_module.h.
#include "util/python_module.h"

#include <cstdlib>

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
  return spec;
}

}  // namespace stitch
