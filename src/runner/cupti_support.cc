// Loading CUPTI at run time (see cupti_support.h).
#include "runner/cupti_support.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <vector>

namespace stitch::runner {

void* open_cupti_library(std::string& detail) {
  std::vector<std::string> candidates = {"libcupti.so.13", "libcupti.so"};
  if (std::string(STITCH_CUPTI_LIBRARY_DIR).size())
    candidates.push_back(std::string(STITCH_CUPTI_LIBRARY_DIR) + "/libcupti.so");
  candidates.push_back("/usr/local/cuda/lib64/libcupti.so");
  candidates.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  std::string errors;
  for (const auto& name : candidates) {
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library) return library;
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", dlerror());
  }
  detail = "libcupti not found: " + errors;
  return nullptr;
}

}  // namespace stitch::runner
