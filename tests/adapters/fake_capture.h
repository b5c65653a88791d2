// Test fixtures for the adapters: a capture of data/fake_task.py (graph.json and capture.json from
// the real harness, checked in; task.py; a weights.safetensors written here with known values), the
// fake host-memory program (data/fake_program.c) compiled with the system C compiler, and a small
// program source tree whose local includes chain through a sibling header and the repo's kernels/.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "util/result.h"

namespace stitch::adapters::testing {

namespace fs = std::filesystem;

const fs::path kSourceDir = STITCH_SOURCE_DIR;
const fs::path kData = kSourceDir / "tests" / "adapters" / "data";

// A temporary directory removed with its contents.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The known param values the weights file holds (graph order: bias [8], inner.weight [3, 8],
// inner.bias [3], scale [8]), and the input x [4, 8] the tests feed.
std::vector<float> fake_bias();
std::vector<float> fake_weight();
std::vector<float> fake_inner_bias();
std::vector<float> fake_scale();
std::vector<float> fake_x();

// capture_dir/{graph.json, capture.json, task.py, weights.safetensors}.
Status write_fake_capture(const fs::path& capture_dir);

// Compiles data/fake_program.c into `output` with `cc`; an Error when no C compiler works.
Status build_fake_program(const fs::path& output);

// dir/src/program.cu including "helpers.cuh" (beside it; it includes "detail/more.cuh") and
// "kernels/program_support.cuh" (repo root; includes "runtime.cuh" and "stitch/program.h").
// Returns the source path.
Result<fs::path> write_program_tree(const fs::path& dir);

// The repo's include dirs as the loop passes them: include/ and the repo root.
std::vector<fs::path> repo_include_dirs();

}  // namespace stitch::adapters::testing
