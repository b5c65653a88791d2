// `generate` (generate.h).
#include "app/generate.h"

#include <set>

#include <fmt/format.h>

#include "app/planner_options.h"
#include "app/target.h"
#include "codegen/program_emitter.h"
#include "ir/ir.h"
#include "plan/passes.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "util/fs.h"
#include "verify/build/build_cache.h"
#include "verify/build/gpu_info.h"
#include "verify/verifier.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;

Result<CompiledProgram> compile_program(const GenerateOptions& options, Compiler& compiler,
                                        const fs::path& source,
                                        const std::vector<std::string>& emitted_libraries) {
  BuildRequest request;
  request.sources = {source};
  request.arch = !options.arch.empty() ? options.arch
                 : query_gpu(0)        ? query_gpu(0)->arch()
                                       : std::string(kDefaultArch);
  // The libraries as `verify` derives them (sorted, with those its headers imply), so that the
  // build cache entry made here is the one `verify` of this program finds.
  std::set<std::string> libraries(emitted_libraries.begin(), emitted_libraries.end());
  for (const auto& library : detect_program_libraries({source}, compiler.include_dirs()))
    libraries.insert(library);
  request.libraries.assign(libraries.begin(), libraries.end());
  request.output_path = source.parent_path() / "program.so";
  STITCH_ASSIGN_OR_RETURN(
      BuildResult built,
      build_maybe_cached(compiler, request, options.build_cache, options.worker_id));
  if (!built.ok) {
    std::string message = fmt::format("the generated program does not compile ({}):", built.failure);
    for (const auto& diagnostic : built.diagnostics)
      message += fmt::format("\n  {}:{}: {}", diagnostic.file, diagnostic.line, diagnostic.message);
    return Error{message};
  }
  if (built.library_path != request.output_path) {  // a cache entry: a copy beside program.cu
    std::error_code ec;
    fs::copy_file(built.library_path, request.output_path, fs::copy_options::overwrite_existing,
                  ec);
    if (ec)
      return make_error(ErrorKind::machine, "copying {} to {}: {}", built.library_path.string(),
                        request.output_path.string(), ec.message());
  }
  return CompiledProgram{request.output_path, request.arch, built.seconds, built.kernels.size(),
                         built.cache_hit};
}

}  // namespace

Result<GenerateResult> generate_program(const GenerateOptions& options, const TaskCapture& capture,
                                        Compiler& compiler) {
  TargetRules rules;
  rules.graph_file = true;
  STITCH_ASSIGN_OR_RETURN(ResolvedTarget target, resolve_target(options.target, rules, capture));
  fs::path out_dir = options.out;
  if (out_dir.empty())
    out_dir = target.kind == TargetKind::graph_file ? fs::path("generated")
              : target.run                          ? target.run->path("generated")
                                                    : fs::path(options.target) / "generated";
  auto graph = ir::load_graph(target.graph.string());
  if (!graph.ok()) return graph.error().with_kind(ErrorKind::bad_input);
  STITCH_ASSIGN_OR_RETURN(Track track, track_from_option(options.track));
  const plan::PlanOptions plan_options =
      planner_options({track, options.strict_fp32_gemm, "", options.inference}, query_gpu(0));
  STITCH_ASSIGN_OR_RETURN(plan::Plan plan, plan::make_plan(*graph, plan_options));
  codegen::EmitOptions emit_options;
  emit_options.cuda_graph = options.cuda_graph;
  STITCH_ASSIGN_OR_RETURN(codegen::EmittedProgram program,
                          codegen::emit_program(plan, emit_options));
  GenerateResult result;
  result.source = out_dir / "program.cu";
  result.subtasks = plan.subtasks.size();
  result.libraries = program.libraries;
  STITCH_TRY(make_dirs(out_dir));
  STITCH_TRY(plan::save_plan(plan, (out_dir / "plan.json").string()));
  STITCH_TRY(write_file_atomic(result.source, program.source));
  if (options.compile)
    result.compiled = compile_program(options, compiler, result.source, program.libraries);
  return result;
}

}  // namespace stitch::app
