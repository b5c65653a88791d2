// `stitchcuda generate TASK.py|RUN_DIR|GRAPH.json`: the built-in Coder end to end without a GPU
// (app/generate.h): plan, emit and, unless --no-compile, build with nvcc to prove it compiles.
// Writes plan.json and program.cu into the run directory's generated/ (or --out). Exit 0
// generated, 1 refused or failed, 2 bad input.
#include <fmt/format.h>

#include "app/generate.h"
#include "cli/build_cache_option.h"
#include "cli/commands.h"
#include "cli/common_options.h"
#include "util/process.h"

namespace stitch::cli {
namespace {

Result<CommandEnd> run_generate(app::GenerateOptions options, const BuildCacheOption& cache) {
  options.build_cache = cache.resolved();
  auto capture = app::system_task_capture(
      options.runs_dir, print_progress);
  SystemProcessRunner process_runner;
  NvccCompiler compiler(process_runner);
  STITCH_ASSIGN_OR_RETURN(app::GenerateResult generated,
                          app::generate_program(options, capture, compiler));
  std::string libraries;
  for (const auto& library : generated.libraries)
    libraries += " -l" + library;
  fmt::print("generated {} ({} subtasks, libraries:{})\n", generated.source.string(),
             generated.subtasks, libraries.empty() ? " none" : libraries);
  if (!generated.compiled) return CommandEnd::succeeded;
  STITCH_ASSIGN_OR_RETURN(app::CompiledProgram compiled, *generated.compiled);
  fmt::print("compiled {} for {} in {:.1f} s ({} kernels{})\n", compiled.library.string(),
             compiled.arch, compiled.seconds, compiled.kernels,
             compiled.cache_hit ? ", from the build cache" : "");
  return CommandEnd::succeeded;
}

}  // namespace

CommandAction setup_generate(CLI::App& app) {
  auto options = std::make_shared<app::GenerateOptions>();
  auto cache = std::make_shared<BuildCacheOption>();
  add_target_argument(app, options->target, TargetKinds::task_run_dir_or_graph);
  app.add_option(
      "--out", options->out,
      "Directory for program.cu and plan.json (default: the run directory's generated/)");
  add_runs_dir_option(app, options->runs_dir);
  app.add_option("--arch", options->arch,
                 "nvcc target for the compile check (default: the GPU's, else sm_90)");
  app.add_flag("!--no-compile", options->compile, "Only write the source; skip the nvcc check");
  app.add_flag("!--no-graph", options->cuda_graph,
               "Launch subtasks directly instead of replaying a CUDA graph");
  app.add_option("--track", options->track,
                 "Precision track: fp32 (FP32-accurate GEMMs), tf32 or bf16 (every GEMM on that "
                 "tensor-core math, as `verify --track` judges it)")
      ->capture_default_str();
  app.add_flag("--strict-fp32-gemm", options->strict_fp32_gemm,
               "Every GEMM in strict FP32 (no split-precision 3xTF32 on tensor cores, which the "
               "planner otherwise picks for compute-bound GEMMs and fused attention: attention "
               "then runs its FP32 FMA kernel)");
  app.add_flag("--inference", options->inference,
               "Eval semantics: BatchNorm uses its running statistics (folded into a per-channel "
               "affine at init) where the task runs in training mode; verify and run still judge "
               "against the training-mode reference");
  cache->add_to(app,
                "Build cache directory shared with verify (default $STITCH_BUILD_CACHE or "
                "~/.cache/stitchcuda/builds)",
                "Compile into the output directory (program.so) instead of the build cache");
  return [options, cache]() { return run_generate(*options, *cache); };
}

}  // namespace stitch::cli
