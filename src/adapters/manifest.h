// best/manifest.json, the record the adapters read at run time (model_new.py, main.cc) and a person
// reads to rebuild or call the program, and the build commands it holds.
//
// manifest.json (format "stitchcuda.best", version 1):
//   abi_version, task {name, file, sha256}, training
//   program "program.so", sources ["program.cu", ...], headers ["kernels/row.cuh", ...]
//   params   [{name, kind, shape, dtype}]              graph.json order = stitch_init order
//   inputs   [{name, kind, shape, dtype, distribution}] graph.json order = stitch_forward order
//   outputs  [{name "output0", shape, dtype}]
//   specialized_inputs [{position, name, value}]        non-tensor forward arguments baked in
//   constants_file "constants.safetensors" | null       lifted tensor constants (kind "constant")
//   libraries ["cublasLt", ...]
//   build {cwd ".", command [argv], command_line}       rebuilds program.so in best/
//   main  {source "main.cc", command [argv], command_line, built}
//   export_dir (absolute, where it was written), provenance {...} (the caller's)
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/ir.h"
#include "util/result.h"

namespace stitch::adapters {

struct ManifestFacts {
  std::vector<std::string> sources;  // relative to best/
  std::vector<std::string> headers;  // relative to best/include
  std::vector<std::string> libraries;
  std::vector<std::string> build_command;
  std::vector<std::string> main_command;
  bool main_built = false;
  bool has_constants_file = false;
  nlohmann::json specialized_inputs = nlohmann::json::array();
  std::filesystem::path export_dir;
  nlohmann::json provenance = nlohmann::json::object();
};

nlohmann::json make_manifest(const ir::Graph& graph, const ManifestFacts& facts);

// `original` (a BuildResult::command: nvcc, flags, -I<dirs>, absolute sources, -o <library>, -l...)
// made to run in best/: nvcc by name, every -I replaced by one -Iinclude, each of `sources` by its
// name in best/ (`best_names`, same order), the output by program.so. Other flags are kept.
std::vector<std::string> relocate_build_command(const std::vector<std::string>& original,
                                                const std::vector<std::filesystem::path>& sources,
                                                const std::vector<std::string>& best_names);

// The command NvccCompiler would run for these sources in best/ (standard flags, `arch`).
Result<std::vector<std::string>> default_build_command(const std::string& arch,
                                                       const std::vector<std::string>& best_names,
                                                       const std::vector<std::string>& libraries);

// The standalone main's build, run in best/.
std::vector<std::string> main_build_command(const std::string& nvcc);

// argv as one POSIX shell line (arguments quoted only where needed).
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace stitch::adapters
