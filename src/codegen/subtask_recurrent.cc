// Recurrent subtasks: a CudnnRnn (kernels/rnn.cuh) member of Program::Convs beside the
// convolutions (they share the cuDNN handle). Program::init_convs describes it and times its
// algorithms on scratch (the RNNs share one workspace, grown to the largest they need);
// run_init_subtasks copies its parameters into cuDNN's weight layout, once, after the at-init
// subtasks that may have produced them; run_subtasks runs it. All cuDNN descriptor settings stay
// inside rnn.cuh: the emitter passes sizes, math and pointers only.
#include "codegen/emit_context.h"
#include "plan/kernel_choice.h"
#include "plan/recurrent.h"

namespace stitch::codegen {
namespace {

using plan::RecurrentSpec;
using plan::Store;
using plan::Subtask;

constexpr const char* kCellNames[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};  // RnnCell

Status check_recurrent(const RecurrentSpec& spec) {
  if (!spec.x.is_contiguous() || !spec.h0.is_contiguous() || (spec.c0 && !spec.c0->is_contiguous()))
    return make_error("cuDNN's RNN reads a contiguous input and states");
  for (const plan::Access& param : spec.params)
    if (!param.is_contiguous()) return make_error("cuDNN's RNN reads contiguous parameters");
  if (static_cast<int>(spec.params.size()) != plan::recurrent_param_count(spec))
    return make_error("a recurrent layer with {} params where its layout has {}",
                      spec.params.size(), plan::recurrent_param_count(spec));
  if (spec.stores.empty() || spec.stores[0].from.index != 0)
    return make_error("a recurrent layer stores its output y first");
  return {};
}

void emit_rnn_init(EmitContext& ctx, const Subtask& subtask, const RecurrentSpec& spec,
                   const std::string& member) {
  CodeWriter& iw = ctx.pieces().conv_init;
  iw.open("{{  // {}", subtask.id);
  iw.line("const RnnShape shape = rnn_shape(RnnCell::{}, {}, {}, {}, {}, {}, {}, {}, {});",
          kCellNames[static_cast<int>(spec.cell)], spec.seq_len, spec.batch, spec.input_size,
          spec.hidden_size, spec.layers, spec.bidirectional, spec.batch_first, spec.has_biases);
  // TF32 tensor cores on the tf32 and bf16 tracks (float32 data either way); strict FP32 on fp32.
  const bool tf32 = plan::subtask_tensor_math(subtask) != plan::TensorMath::fp32;
  iw.line("STITCH_CHECK(s->convs.{}.init(s->convs.cudnn.get(), shape, RnnMath::{}, error));",
          member, tf32 ? "tf32" : "strict_fp32");
  iw.line("STITCH_CHECK(s->convs.rnn_workspace.reserve(s->convs.{}.max_workspace_bytes(), error));",
          member);
  iw.line("STITCH_CHECK(s->convs.{}.tune(s->convs.rnn_workspace.data(), stream, error, {}));",
          member, std::max(1, ctx.options().tune_iterations));
  iw.close();
}

}  // namespace

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const RecurrentSpec& spec,
                 CodeWriter& w) {
  STITCH_TRY(check_recurrent(spec));
  ProgramPieces& pieces = ctx.pieces();
  pieces.uses_rnn = true;
  const std::string member = fmt::format("rnn{}", pieces.rnn_count++);
  pieces.conv_members.push_back(fmt::format("CudnnRnn {};  // {}", member, subtask.id));
  emit_rnn_init(ctx, subtask, spec, member);

  // The parameters, once: in run_init_subtasks, after any at-init subtask that produced them.
  CodeWriter& load = pieces.init_body;
  load.line("// {}: its parameters into cuDNN's weight layout", subtask.id);
  load.open("{{");
  load.line("const float* const params[] = {{");
  for (const plan::Access& param : spec.params) {
    STITCH_ASSIGN_OR_RETURN(std::string pointer, ctx.access_pointer(param));
    load.line("    {},", pointer);
  }
  load.line("}};");
  load.line("STITCH_CHECK(s->convs.{}.load_weights(params, stream, error));", member);
  load.close();

  // y always (cuDNN writes it); h_n and c_n where stored, else null (not computed).
  std::string outputs[3] = {"nullptr", "nullptr", "nullptr"};
  for (const Store& store : spec.stores) {
    if (store.from.index < 0 || store.from.index > 2)
      return make_error("a recurrent store of output {}", store.from.index);
    STITCH_ASSIGN_OR_RETURN(outputs[store.from.index], ctx.typed_base(store.value, true));
  }
  STITCH_ASSIGN_OR_RETURN(std::string x, ctx.access_pointer(spec.x));
  STITCH_ASSIGN_OR_RETURN(std::string h0, ctx.access_pointer(spec.h0));
  std::string c0 = "nullptr";
  if (spec.c0) {
    STITCH_ASSIGN_OR_RETURN(c0, ctx.access_pointer(*spec.c0));
  }
  w.line("STITCH_CHECK(s->convs.{}.run(", member);
  w.line("    {},", x);
  w.line("    {},", h0);
  w.line("    {},", c0);
  for (const std::string& output : outputs)
    w.line("    {},", output);
  w.line("    s->convs.rnn_workspace.data(), stream, error));");
  return {};
}

}  // namespace stitch::codegen
