// Loading the candidate library; see program_library.h.
#include "runner/program_library.h"

#include <dlfcn.h>

#include <cstring>

namespace stitch::runner {
namespace {

template <typename T>
Status resolve(void* handle, const char* name, T& out) {
  dlerror();
  void* symbol = dlsym(handle, name);
  if (!symbol) {
    const char* text = dlerror();
    return make_error("missing symbol {}{}{}", name, text ? ": " : "", text ? text : "");
  }
  out = reinterpret_cast<T>(symbol);
  return {};
}

}  // namespace

std::string ProgramLibrary::error_text(void* state) const {
  if (!last_error) return "";
  const char* text = last_error(state);
  if (!text) return "(stitch_last_error returned NULL)";
  return std::string(text, strnlen(text, 4096));
}

Result<ProgramLibrary> load_program(const std::filesystem::path& path) {
  ProgramLibrary program;
  program.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!program.handle) {
    const char* text = dlerror();
    return make_error("dlopen {}: {}", path.string(), text ? text : "unknown error");
  }
  STITCH_TRY(resolve(program.handle, "stitch_abi_version", program.abi_version));
  STITCH_TRY(resolve(program.handle, "stitch_init", program.init));
  STITCH_TRY(resolve(program.handle, "stitch_forward", program.forward));
  STITCH_TRY(resolve(program.handle, "stitch_destroy", program.destroy));
  STITCH_TRY(resolve(program.handle, "stitch_last_error", program.last_error));
  return program;
}

}  // namespace stitch::runner
