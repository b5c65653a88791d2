// `stitchcuda generate TASK.py|RUN_DIR|GRAPH.json`: the built-in Coder end to end without a GPU —
// plan the captured graph (plan/planner.h), emit the program (codegen/program_emitter.h) and,
// unless
// --no-compile, build it with nvcc to prove it compiles. Writes plan.json and program.cu into the
// run directory's generated/ (or --out). Exit 0 generated, 1 refused or failed, 2 bad input.
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/task_capture.h"
#include "codegen/program_emitter.h"
#include "harness/harness.h"
#include "ir/ir.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build_cache.h"
#include "verify/compiler.h"
#include "verify/gpu_info.h"
#include "verify/verifier.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

struct GenerateCommandOptions {
  std::string target;
  std::string runs_dir = "runs";
  std::string out;
  std::string arch;
  bool compile = true;
  bool no_graph = false;
  std::string build_cache;
  bool no_build_cache = false;
  bool strict_fp32_gemm = false;
};

Result<run::RunDir> capture_for_generate(const GenerateCommandOptions& options, bool& bad_input) {
  STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
  return capture_task_into_new_run(options.target, options.runs_dir, location, bad_input);
}

int run_generate(const GenerateCommandOptions& options) {
  std::error_code ec;
  const fs::path target = options.target;
  fs::path graph_path, out_dir = options.out;
  if (fs::is_directory(target, ec)) {
    graph_path = target / "graph.json";
    if (out_dir.empty()) out_dir = target / "generated";
  } else if (target.extension() == ".py" && fs::is_regular_file(target, ec)) {
    bool bad_input = false;
    auto run = capture_for_generate(options, bad_input);
    if (!run.ok()) {
      fmt::print(stderr, "error: {}\n", run.error().message);
      return bad_input ? kExitBadInput : kExitFailure;
    }
    graph_path = run->path("graph.json");
    if (out_dir.empty()) out_dir = run->path("generated");
  } else if (target.extension() == ".json" && fs::is_regular_file(target, ec)) {
    graph_path = target;
    if (out_dir.empty()) out_dir = "generated";
  } else {
    fmt::print(stderr, "error: {}: not a task (.py), a captured run directory or a graph.json\n",
               options.target);
    return kExitBadInput;
  }
  if (!fs::is_regular_file(graph_path, ec)) {
    fmt::print(stderr, "error: {}: no graph.json (not a captured run directory)\n",
               graph_path.parent_path().string());
    return kExitBadInput;
  }
  auto graph = ir::load_graph(graph_path.string());
  if (!graph.ok()) {
    fmt::print(stderr, "error: {}\n", graph.error().message);
    return kExitBadInput;
  }
  plan::PlanOptions plan_options;
  if (auto gpu = query_gpu(0)) plan_options.peaks = plan::peaks_for_gpu(gpu->name, gpu->sm_count);
  plan_options.allow_tf32x3 = !options.strict_fp32_gemm;
  auto plan = plan::make_plan(*graph, plan_options);
  if (!plan.ok()) {
    fmt::print(stderr, "error: {}\n", plan.error().message);
    return kExitFailure;
  }
  codegen::EmitOptions emit_options;
  emit_options.cuda_graph = !options.no_graph;
  auto program = codegen::emit_program(*plan, emit_options);
  if (!program.ok()) {
    fmt::print(stderr, "error: {}\n", program.error().message);
    return kExitFailure;
  }
  const fs::path source = out_dir / "program.cu";
  for (Status written :
       {make_dirs(out_dir), plan::save_plan(*plan, (out_dir / "plan.json").string()),
        write_file_atomic(source, program->source)}) {
    if (!written.ok()) {
      fmt::print(stderr, "error: {}\n", written.error().message);
      return kExitFailure;
    }
  }
  std::string libraries;
  for (const auto& library : program->libraries)
    libraries += " -l" + library;
  fmt::print("generated {} ({} subtasks, libraries:{})\n", source.string(), plan->subtasks.size(),
             libraries.empty() ? " none" : libraries);
  if (!options.compile) return kExitOk;

  SystemProcessRunner process_runner;
  NvccCompiler compiler(process_runner);
  BuildRequest request;
  request.sources = {source};
  request.arch = !options.arch.empty() ? options.arch
                 : query_gpu(0)        ? query_gpu(0)->arch()
                                       : std::string(kDefaultArch);
  // The libraries as `verify` derives them (sorted, with those its headers imply), so that the
  // build cache entry made here is the one `verify` of this program finds.
  std::set<std::string> libraries_needed(program->libraries.begin(), program->libraries.end());
  for (const auto& library : detect_program_libraries({source}, compiler.include_dirs()))
    libraries_needed.insert(library);
  request.libraries.assign(libraries_needed.begin(), libraries_needed.end());
  request.output_path = out_dir / "program.so";
  const fs::path cache_dir = options.no_build_cache        ? fs::path()
                             : options.build_cache.empty() ? default_build_cache_dir()
                                                           : fs::path(options.build_cache);
  Result<BuildResult> built = build_maybe_cached(compiler, request, cache_dir, "generate");
  if (!built.ok()) {
    fmt::print(stderr, "error: {}\n", built.error().message);
    return kExitFailure;
  }
  if (!built->ok) {
    fmt::print(stderr, "error: the generated program does not compile ({}):\n", built->failure);
    for (const auto& diagnostic : built->diagnostics)
      fmt::print(stderr, "  {}:{}: {}\n", diagnostic.file, diagnostic.line, diagnostic.message);
    return kExitFailure;
  }
  if (built->library_path != request.output_path) {  // a cache entry: a copy beside program.cu
    fs::copy_file(built->library_path, request.output_path, fs::copy_options::overwrite_existing,
                  ec);
    if (ec) {
      fmt::print(stderr, "error: copying {} to {}: {}\n", built->library_path.string(),
                 request.output_path.string(), ec.message());
      return kExitFailure;
    }
  }
  fmt::print("compiled {} for {} in {:.1f} s ({} kernels{})\n", request.output_path.string(),
             request.arch, built->seconds, built->kernels.size(),
             built->cache_hit ? ", from the build cache" : "");
  return kExitOk;
}

}  // namespace

CommandAction setup_generate(CLI::App& app) {
  auto options = std::make_shared<GenerateCommandOptions>();
  app.add_option("target", options->target,
                 "A task (.py, captured first), a run directory, or a graph.json")
      ->required();
  app.add_option(
      "--out", options->out,
      "Directory for program.cu and plan.json (default: the run directory's generated/)");
  app.add_option("--runs-dir", options->runs_dir, "Where run directories are created")
      ->capture_default_str();
  app.add_option("--arch", options->arch,
                 "nvcc target for the compile check (default: the GPU's, else sm_90)");
  app.add_flag("!--no-compile", options->compile, "Only write the source; skip the nvcc check");
  app.add_flag("--no-graph", options->no_graph,
               "Launch subtasks directly instead of replaying a CUDA graph");
  app.add_flag("--strict-fp32-gemm", options->strict_fp32_gemm,
               "Every GEMM in strict FP32 (no split-precision 3xTF32 on tensor cores, which the "
               "planner otherwise picks for compute-bound GEMMs)");
  app.add_option("--build-cache", options->build_cache,
                 "Build cache directory shared with verify (default $STITCH_BUILD_CACHE or "
                 "~/.cache/stitchcuda/builds)");
  app.add_flag("--no-build-cache", options->no_build_cache,
               "Compile into the output directory (program.so) instead of the build cache");
  return [options]() -> int { return run_generate(*options); };
}

}  // namespace stitch::cli
