// assemble_program: the program.cu text from the pieces the subtask emitters filled. Everything a
// program shares (state, init and forward steps, CUDA graphs, the C ABI) is
// kernels/host_program.cuh; this writes only what differs per plan: includes, functors, the Program
// traits (tables and layout) and its three functions.
#include <algorithm>

#include "codegen/emit_context.h"
#include "codegen/functor_sharing.h"

namespace stitch::codegen {
namespace {

void emit_includes(const ProgramPieces& pieces, CodeWriter& out) {
  out.line("#include <array>");
  out.line("#include <cstdint>");
  out.line("#include <string>");
  out.blank();
  out.line("#include \"kernels/host_program.cuh\"");
  out.line("#include \"kernels/scalar_ops.cuh\"");
  out.line("#include \"kernels/elementwise.cuh\"");
  out.line("#include \"kernels/reduction.cuh\"");
  out.line("#include \"kernels/row.cuh\"");
  if (pieces.uses_matmul) out.line("#include \"kernels/matmul.cuh\"");
  if (pieces.uses_tf32x3) out.line("#include \"kernels/matmul_tf32x3.cuh\"");
  if (pieces.uses_pool) out.line("#include \"kernels/pooling.cuh\"");
  if (pieces.uses_scan) out.line("#include \"kernels/scan.cuh\"");
  if (pieces.uses_gather) out.line("#include \"kernels/gather.cuh\"");
  if (pieces.uses_conv) out.line("#include \"kernels/conv.cuh\"");
  if (pieces.uses_rnn) out.line("#include \"kernels/rnn.cuh\"");
  if (pieces.uses_depthwise) out.line("#include \"kernels/conv_depthwise.cuh\"");
  if (pieces.uses_conv_igemm) out.line("#include \"kernels/conv_igemm_tf32x3.cuh\"");
  if (pieces.uses_conv_direct) out.line("#include \"kernels/conv_direct.cuh\"");
  if (pieces.uses_conv_transpose)
    out.line("#include \"kernels/conv_transpose.cuh\"");
  if (pieces.uses_conv_timing) out.line("#include \"kernels/conv_engine_timing.cuh\"");
  if (pieces.uses_gemm_tf32x3) out.line("#include \"kernels/gemm_tf32x3.cuh\"");
  if (pieces.uses_attention) out.line("#include \"kernels/attention.cuh\"");
  if (pieces.uses_attention_mma) out.line("#include \"kernels/attention_mma.cuh\"");
  for (const std::string& include : pieces.llm_includes)
    out.line("{}", include);
}

// `static constexpr std::array<Type, N> kName = {{ rows }};` (one row a line).
void emit_table(CodeWriter& out, const char* type, const char* name,
                const std::vector<std::string>& rows) {
  if (rows.empty()) {
    out.line("static constexpr std::array<{}, 0> {} = {{}};", type, name);
    return;
  }
  out.open("static constexpr std::array<{}, {}> {} = {{{{", type, rows.size(), name);
  for (const auto& row : rows)
    out.line("{},", row);
  out.close("};");
}

std::vector<std::string> tensor_specs(const std::vector<const ir::TensorType*>& types) {
  std::vector<std::string> rows;
  for (const auto* type : types)
    rows.push_back(fmt::format("{{{}, {}, {{{}}}}}", static_cast<int>(type->dtype), type->rank(),
                               type->rank() ? int_list(type->shape) : "0"));
  return rows;
}

void emit_tables(const EmitContext& ctx, CodeWriter& out) {
  const ir::Graph& graph = ctx.plan().graph;
  std::vector<const ir::TensorType*> params, inputs, outputs;
  for (const auto& p : graph.params)
    params.push_back(&p.type);
  for (const auto& in : graph.inputs)
    inputs.push_back(&in.type);
  for (const auto& ref : graph.outputs)
    outputs.push_back(&graph.type_of(ref));
  emit_table(out, "TensorSpec", "kParams", tensor_specs(params));
  emit_table(out, "TensorSpec", "kInputs", tensor_specs(inputs));
  emit_table(out, "TensorSpec", "kOutputs", tensor_specs(outputs));
  std::vector<std::string> slots;
  for (size_t p = 0; p < graph.params.size(); ++p)
    slots.push_back(
        fmt::format("{{{}, {}}}", ctx.param_offsets()[p], graph.params[p].type.bytes()));
  emit_table(out, "ParamSlot", "kParamSlots", slots);
  emit_table(out, "ReduceExtent", "kReductions", ctx.pieces().reductions);
}

// The arena: the plan's intermediates (the library workspace their last part: cuBLASLt's and
// cuDNN's, whose calls never overlap), then the reduction scratch.
void emit_layout(const EmitContext& ctx, CodeWriter& out) {
  const plan::HostStrategy& host = ctx.plan().host;
  const int64_t arena_plan = std::max<int64_t>(host.workspace_bytes, 0);
  const bool gemms = ctx.pieces().uses_matmul || ctx.pieces().uses_conv;
  const int64_t lt_bytes = gemms ? host.library_workspace_bytes : 0;
  out.open("static constexpr ProgramLayout kLayout = {{");
  out.line("{},  // persistent_bytes", std::max<int64_t>(ctx.persistent_total(), 256));
  out.line("{},  // arena_bytes", align256(arena_plan));
  out.line("{},  // lt_workspace_bytes", lt_bytes);
  out.line("{},  // lt_workspace_offset", gemms ? std::max<int64_t>(arena_plan - lt_bytes, 0) : 0);
  out.line("{},  // cuda_graph", ctx.options().cuda_graph && host.cuda_graph);
  out.close(";");
}

void emit_program_traits(const EmitContext& ctx, CodeWriter& out) {
  const ProgramPieces& pieces = ctx.pieces();
  out.open("struct Program {{");
  emit_tables(ctx, out);
  emit_layout(ctx, out);
  out.line("static constexpr bool kUsesMatmul = {};", pieces.uses_matmul);
  if (pieces.gemm_members.empty()) {
    out.line("struct Gemms {{}};");
  } else {
    out.open("struct Gemms {{");
    for (const auto& member : pieces.gemm_members)
      out.line("{}", member);
    out.close(";");
  }
  if (pieces.uses_conv || pieces.uses_rnn) {
    out.open("struct Convs {{");
    out.line("CudnnHandle cudnn;  // declared first: destroyed after the convolutions");
    out.line("void* workspace = nullptr;  // the arena's library workspace");
    if (pieces.uses_rnn)
      out.line("RnnWorkspace rnn_workspace;  // shared: RNN calls never overlap");
    for (const auto& member : pieces.conv_members)
      out.line("{}", member);
    out.close(";");
  }
  out.line("using State = ProgramState<Program>;");
  if (pieces.uses_matmul) out.line("static int init_gemms(State* s, cudaStream_t stream);");
  if (pieces.uses_conv || pieces.uses_rnn)
    out.line("static int init_convs(State* s, cudaStream_t stream);");
  out.line("static int run_init_subtasks(State* s, cudaStream_t stream);");
  out.line(
      "static int run_subtasks(State* s, const stitch_tensor* inputs, stitch_tensor* outputs,");
  out.line("                        cudaStream_t stream);");
  out.close(";");
}

void emit_body(CodeWriter& out, const CodeWriter& body) {
  for (const auto& line : split_lines(body.text()))
    out.line("{}", line);
}

// The LLM-written subtasks' code (hybrid Coder), before the program that calls it.
void emit_llm_code(const ProgramPieces& pieces, CodeWriter& out) {
  if (pieces.llm_code.text().empty()) return;
  out.line("// Subtasks written by an LLM against their signatures (the hybrid Coder).");
  out.line("namespace {{");
  emit_body(out, pieces.llm_code);
  out.line("}}  // namespace");
  out.blank();
}

// The state outputs (the values of the buffers forward updates, after the user outputs) become
// the buffers' values for the next call: copied into their param slots, last in the forward.
void emit_state_writes(const EmitContext& ctx, CodeWriter& out) {
  const ir::Graph& graph = ctx.plan().graph;
  const size_t users = graph.user_output_count();
  for (size_t k = 0; k < graph.state_params.size(); ++k) {
    const auto param =
        std::find_if(graph.params.begin(), graph.params.end(),
                     [&](const ir::Param& p) { return p.name == graph.state_params[k]; });
    const size_t p = static_cast<size_t>(param - graph.params.begin());
    out.line("STITCH_CHECK_CUDA(cudaMemcpyAsync(s->persistent + {}, outputs[{}].data, {},",
             ctx.param_offsets()[p], users + k, param->type.bytes());
    out.line("                                  cudaMemcpyDeviceToDevice, stream));  // {}",
             param->name);
  }
}

void emit_functions(const EmitContext& ctx, CodeWriter& out) {
  const ProgramPieces& pieces = ctx.pieces();
  out.line("// Every forward subtask, in plan order, on `stream` (captured into a CUDA graph).");
  out.line(
      "int Program::run_subtasks(State* s, const stitch_tensor* inputs, stitch_tensor* outputs,");
  out.open("                          cudaStream_t stream) {{");
  out.line("std::string& error = s->error;");
  out.line("(void)inputs;");
  out.line("(void)outputs;");
  emit_body(out, pieces.forward_body);
  emit_state_writes(ctx, out);
  out.line("return STITCH_OK;");
  out.close();
  out.blank();
  out.line("// Subtasks that read only params: run once, in stitch_init.");
  out.open("int Program::run_init_subtasks(State* s, cudaStream_t stream) {{");
  out.line("std::string& error = s->error;");
  out.line("const stitch_tensor* inputs = nullptr;");
  out.line("stitch_tensor* outputs = nullptr;");
  out.line("(void)inputs;");
  out.line("(void)outputs;");
  emit_body(out, pieces.kernel_prepare);
  emit_body(out, pieces.init_body);
  out.line("return STITCH_OK;");
  out.close();
  if (pieces.uses_conv || pieces.uses_rnn) {
    out.blank();
    out.line(
        "// The cuDNN handle, then each convolution's engine choice (timed on scratch), at init.");
    out.open("int Program::init_convs(State* s, cudaStream_t stream) {{");
    out.line("std::string& error = s->error;");
    out.line("s->convs.workspace =");
    out.line(
        "    kLayout.lt_workspace_bytes ? s->arena.at(kLayout.lt_workspace_offset) : nullptr;");
    out.line("STITCH_CHECK(s->convs.cudnn.create(error));");
    emit_body(out, pieces.conv_init);
    out.line("return STITCH_OK;");
    out.close();
  }
  if (!pieces.uses_matmul) return;
  out.blank();
  out.line("// Each GEMM's description and algorithm choice (timed on scratch), at init.");
  out.open("int Program::init_gemms(State* s, cudaStream_t stream) {{");
  out.line("std::string& error = s->error;");
  emit_body(out, pieces.gemm_init);
  out.line("return STITCH_OK;");
  out.close();
}

}  // namespace

std::string assemble_program(const EmitContext& ctx) {
  const plan::Plan& plan = ctx.plan();
  CodeWriter out;
  out.line("// Generated by StitchCUDA's built-in Coder from task '{}' (plan v{}). Regenerate with",
           plan.task, plan.version);
  out.line(
      "// `stitchcuda generate`; edits here are lost. fp32 track: FP32 arithmetic throughout.");
  out.line(
      "// The host program (state, init, forward, CUDA graphs, ABI) is kernels/host_program.cuh.");
  emit_includes(ctx.pieces(), out);
  out.blank();
  emit_llm_code(ctx.pieces(), out);
  out.line("namespace {{");  // not indented (the project's style)
  out.blank();
  out.line("using namespace stitch::kernels;");
  out.blank();
  for (const auto& line : split_lines(share_identical_functors(ctx.pieces().functors.text())))
    out.line("{}", line);
  emit_program_traits(ctx, out);
  out.blank();
  emit_functions(ctx, out);
  out.blank();
  out.line("}}  // namespace");
  out.blank();
  out.line("STITCH_PROGRAM_EXPORTS(Program)");
  return out.text();
}

}  // namespace stitch::codegen
