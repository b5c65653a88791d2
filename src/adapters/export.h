// export_best: the loop's last step (DESIGN.md §3). Writes best/, a folder a user can copy
// anywhere:
//   program.cu (+ the program's other sources), include/ (every local header it includes,
//   transitively, plus stitch/program.h and nlohmann/ for main.cc), program.so, graph.json,
//   task_source.py (the task), constants.safetensors (only for lifted tensor constants),
//   manifest.json (manifest.h), README.md, and the adapters: stitch_extension.cpp + model_new.py
//   (PyTorch) and main.cc (standalone, built to `main` when asked).
// best/ is assembled in a staging folder beside it and swapped in whole, so a reader never sees a
// half-written export; a previous best/ is replaced.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/process.h"
#include "util/result.h"

namespace stitch::adapters {

struct ExportRequest {
  std::filesystem::path capture_dir;  // graph.json, weights.safetensors, task.py
  // The program's .cu files; the first becomes program.cu, the others keep their names.
  std::vector<std::filesystem::path> sources;
  // Where its quoted includes are found (repo include/ and repo root), after each file's own dir.
  std::vector<std::filesystem::path> include_dirs;
  std::filesystem::path library;       // the built program .so
  std::vector<std::string> libraries;  // -l names it links (cublasLt, ...)
  std::filesystem::path out_dir;       // best/
  nlohmann::json provenance;           // copied into best/manifest.json
  bool build_main = true;              // compile the standalone main with nvcc now

  // The argv the library was built with (BuildResult::command): rewritten to run in best/ for
  // manifest.json and README.md. Empty: NvccCompiler's standard command for `arch`.
  std::vector<std::string> build_command;
  std::string arch = "sm_90";
  std::filesystem::path nvcc;  // for main; empty: locate_nvcc() (verify/build/compiler.h)
  // Holds nlohmann/ (copied to best/include/ for main.cc); empty: the one this library was built
  // with.
  std::filesystem::path json_include_dir;
  double main_timeout_s = 300;
};

struct ExportReport {
  std::vector<std::filesystem::path> files;  // every file written, under out_dir, sorted
  bool main_built = false;
  std::string main_build_log;  // nvcc's output, or why it did not run
};

// An Error when the export cannot be made (missing capture files, unreadable sources, an include
// best/ cannot carry, a graph with outputs the manifest cannot describe, I/O failure). A main that
// does not compile is not an error: main_built says so and main_build_log holds the reason.
Result<ExportReport> export_best(const ExportRequest& request, ProcessRunner& runner);

}  // namespace stitch::adapters
