// Subtasks the built-in Coder does not write: opaque ones refuse, naming the op; LLM-written ones
// (subtask_signature.h) are stitched in — their code once, at file scope with its includes
// hoisted, and a checked call of their function with the subtask's real pointers.
#include <algorithm>

#include "codegen/emit_context.h"
#include "util/text.h"

namespace stitch::codegen {

Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::OpaqueSpec& spec,
                 CodeWriter& w) {
  (void)subtask, (void)w;
  const ir::Node& node = ctx.plan().graph.nodes.at(spec.node);
  return make_error("node '{}' ({}): {}; an LLM Coder may write it (--coder hybrid)", node.id,
                    node.op_name, spec.reason.empty() ? "not covered" : spec.reason);
}

namespace {

// The code's #include lines join the program's; the rest goes into the LLM code block.
void add_code(ProgramPieces& pieces, const LlmSubtaskCode& code) {
  pieces.llm_code.line("// ---- {}", code.function);
  for (const std::string& line : split_lines(code.source)) {
    const std::string_view trimmed = trim(line);
    if (trimmed.starts_with("#pragma once")) continue;
    if (trimmed.starts_with("#include")) {
      const std::string include(trimmed);
      if (std::find(pieces.llm_includes.begin(), pieces.llm_includes.end(), include) ==
          pieces.llm_includes.end())
        pieces.llm_includes.push_back(include);
      continue;
    }
    pieces.llm_code.line("{}", line);
  }
}

}  // namespace

Status emit_llm_subtask(EmitContext& ctx, const plan::Subtask& subtask, const LlmSubtaskCode& code,
                        CodeWriter& w) {
  STITCH_ASSIGN_OR_RETURN(SubtaskSignature signature, subtask_signature(ctx.plan(), subtask));
  if (code.function.empty()) return make_error("LLM code without a function name");
  const std::string marker = "// ---- " + code.function + "\n";
  if (ctx.pieces().llm_code.text().find(marker) == std::string::npos) add_code(ctx.pieces(), code);
  std::string arguments;
  for (const SignatureOperand& operand : signature.operands) {
    STITCH_ASSIGN_OR_RETURN(std::string pointer, operand.output
                                                     ? ctx.typed_base(operand.access.base, true)
                                                     : ctx.access_pointer(operand.access));
    arguments += pointer + ", ";
  }
  w.line("// written by an LLM: {};", signature.declaration());
  w.line("STITCH_CHECK_CUDA({}({}stream));", code.function, arguments);
  return {};
}

}  // namespace stitch::codegen
