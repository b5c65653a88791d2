// `generate`: the built-in Coder end to end without a GPU — plan the target's graph
// (plan/planner.h), emit the program (codegen/program_emitter.h) and, unless told not to, build it
// through the build cache `verify` reads, to prove it compiles. Writes plan.json and program.cu
// into the run directory's generated/ (or `out`). Also bench's prepare step, in-process.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "app/task_capture.h"
#include "util/result.h"
#include "verify/build/compiler.h"

namespace stitch::app {

struct GenerateOptions {
  std::string target;  // a task (.py), a run directory or a graph.json (target.h)
  std::string runs_dir = "runs";
  std::string out;   // default: the run directory's generated/, or ./generated for a graph.json
  std::string arch;  // empty: the GPU's, else sm_90
  bool compile = true;
  bool cuda_graph = true;
  std::string track = "fp32";  // the precision track whose tensor-core math the GEMMs use
  bool strict_fp32_gemm = false;
  bool inference = false;  // eval semantics (BatchNorm from running statistics)
  std::filesystem::path build_cache;  // empty: build into `out` (program.so)
  std::string worker_id = "generate";  // the build cache's in-progress directory
};

struct CompiledProgram {
  std::filesystem::path library;  // out/program.so
  std::string arch;
  double seconds = 0;
  size_t kernels = 0;
  bool cache_hit = false;
};

struct GenerateResult {
  std::filesystem::path source;  // out/program.cu
  size_t subtasks = 0;
  std::vector<std::string> libraries;  // what the emitter says the program links
  // Set when compiling was asked for: the program, or why it does not build (work_failed, with
  // nvcc's diagnostics one a line).
  std::optional<Result<CompiledProgram>> compiled;
};

// A refused plan or emitter is a work_failed Error; a bad target or unreadable graph bad_input.
Result<GenerateResult> generate_program(const GenerateOptions& options, const TaskCapture& capture,
                                        Compiler& compiler);

}  // namespace stitch::app
