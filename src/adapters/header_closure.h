// The local headers a program's sources include, transitively, each with the path it gets under
// best/include/ so that `nvcc -I include` finds it from a copy of the sources in best/.
//
// Only quoted includes are followed (angle includes are the toolkit's and the system's). An
// include is looked up as the preprocessor does: beside the including file, then in `include_dirs`
// in order; one found nowhere is left to the compiler's own search paths (e.g. "cuda_runtime.h").
// A header's place under include/ keeps its path relative to where it was found: beside a source it
// sits at the root of include/, in an include dir at its path below that dir, beside another header
// relative to that header's place.
#pragma once

#include <filesystem>
#include <vector>

#include "util/result.h"

namespace stitch::adapters {

struct LocalHeader {
  std::filesystem::path file;      // where it is now (canonical)
  std::filesystem::path relative;  // where it goes, relative to best/include ("kernels/row.cuh")
  bool operator==(const LocalHeader&) const = default;
};

// The closure, sorted by `relative`. An error when an include is absolute, climbs above include/
// ("../x.h" from a source), or two different files would land on the same place.
Result<std::vector<LocalHeader>> local_header_closure(
    const std::vector<std::filesystem::path>& sources,
    const std::vector<std::filesystem::path>& include_dirs);

}  // namespace stitch::adapters
