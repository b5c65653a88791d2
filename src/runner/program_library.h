// The candidate program: dlopen(RTLD_NOW | RTLD_LOCAL) and the ABI's symbols
// (include/stitch/program.h). Loaded only after the sandbox is in place, because static
// initialisers run inside dlopen (HACKS.md row 27).
#pragma once

#include <filesystem>
#include <string>

#include "stitch/program.h"
#include "util/result.h"

namespace stitch::runner {

// The ABI's entry points, typed by their declarations in program.h.
struct ProgramLibrary {
  void* handle = nullptr;
  decltype(&stitch_abi_version) abi_version = nullptr;
  decltype(&stitch_init) init = nullptr;
  decltype(&stitch_forward) forward = nullptr;
  decltype(&stitch_destroy) destroy = nullptr;
  decltype(&stitch_last_error) last_error = nullptr;

  // stitch_last_error copied and bounded: the program owns the pointer and may hand back junk.
  std::string error_text(void* state) const;
};

// An Error names the dlerror() text or the missing symbol; the library is never unloaded (the
// program's threads, if any, may still run its code).
Result<ProgramLibrary> load_program(const std::filesystem::path& path);

}  // namespace stitch::runner
