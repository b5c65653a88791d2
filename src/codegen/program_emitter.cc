// emit_program: plan → program.cu. Each subtask's functors and launch come from its family's
// emitter (subtask_*.cc), in plan order, into the forward or the at-init body; assemble_program
// (program_assembly.cc) puts them around kernels/host_program.cuh. Shapes and strides are baked in
// as literals (the plan is for one shape); only pointers are runtime values.
#include "codegen/program_emitter.h"

#include "codegen/emit_context.h"

namespace stitch::codegen {
namespace {

std::string node_ids(const plan::Plan& plan, const plan::Subtask& subtask) {
  std::string ids;
  for (int node : subtask.nodes) {
    if (!ids.empty()) ids += ", ";
    if (ids.size() > 80) return ids + "...";
    ids += plan.graph.nodes[node].id;
  }
  return ids;
}

Status emit_subtask(EmitContext& ctx, const plan::Subtask& subtask) {
  CodeWriter& w = subtask.at_init ? ctx.pieces().init_body : ctx.pieces().forward_body;
  w.line("// {} ({}): nodes {}", subtask.id, subtask.kernel, node_ids(ctx.plan(), subtask));
  w.open("{{");
  const auto llm = ctx.options().llm_subtasks.find(subtask.id);
  Status status =
      llm != ctx.options().llm_subtasks.end()
          ? emit_llm_subtask(ctx, subtask, llm->second, w)
          : std::visit([&](const auto& spec) -> Status { return emit_spec(ctx, subtask, spec, w); },
                       subtask.spec);
  if (!status.ok()) return status.error().with_context("subtask " + subtask.id);
  w.close();
  return {};
}

}  // namespace

Result<EmittedProgram> emit_program(const plan::Plan& plan, const EmitOptions& options) {
  EmitContext ctx(plan, options);
  for (const plan::Subtask& subtask : plan.subtasks) STITCH_TRY(emit_subtask(ctx, subtask));
  EmittedProgram program;
  program.source = assemble_program(ctx);
  if (ctx.pieces().uses_matmul) program.libraries.push_back("cublasLt");
  if (ctx.pieces().uses_conv || ctx.pieces().uses_rnn) program.libraries.push_back("cudnn");
  return program;
}

}  // namespace stitch::codegen
