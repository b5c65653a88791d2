// Attention subtasks: a score functor (the SDPA mask, then the scores body the plan fused) and one
// launch of kernels/attention.cuh (FP32 FMA) or, when the plan puts the products on tensor cores
// (plan::attention_math_name), of kernels/attention_mma.cuh's variant; the head-dim tile a template
// argument; the kernel's shared-memory limit is raised at init (prepare_attention[_math]).
#include "codegen/emit_context.h"
#include "codegen/emit_elementwise.h"
#include "plan/access.h"
#include "plan/attention_pattern.h"
#include "plan/kernel_choice.h"

namespace stitch::codegen {
namespace {

using plan::Access;
using plan::AttentionSpec;
using plan::Subtask;

// `operator()(b, h, i, j, s)`: s is the scaled score; the SDPA mask applies first, then the body
// (its load 0 is that score). Members: the mask, then the body's other loads.
Result<Members> emit_score_functor(EmitContext& ctx, const std::string& name,
                                   const AttentionSpec& spec) {
  std::vector<Access> loads;
  if (spec.mask) loads.push_back(*spec.mask);
  if (spec.scores)
    loads.insert(loads.end(), spec.scores->loads.begin() + 1, spec.scores->loads.end());
  STITCH_ASSIGN_OR_RETURN(Members members, ctx.pointer_members(loads, "l"));
  CodeWriter& f = ctx.pieces().functors;
  open_functor(f, name, {&members},
               "__device__ float operator()(int64_t b, int64_t h, int64_t i, int64_t j, float s) "
               "const");
  f.line("const int64_t e = ((b * {} + h) * {} + i) * {} + j;", spec.heads, spec.queries,
         spec.keys);
  f.line("(void)e;");
  const std::vector<int64_t> space{spec.batch, spec.heads, spec.queries, spec.keys};
  std::vector<std::string> names = emit_load_lines(f, loads, space, {"b", "h", "i", "j"});
  if (spec.mask) {
    if (spec.mask_kind == plan::AttentionMask::boolean)
      f.line("s = x0 != 0.0f ? s : -INFINITY;");
    else
      f.line("s += x0;");
    names.erase(names.begin());
  }
  std::string result = "s";
  if (spec.scores) {
    names.insert(names.begin(), "s");
    STITCH_ASSIGN_OR_RETURN(std::vector<std::string> steps,
                            ctx.emit_steps(f, *spec.scores, names, {}, "v"));
    if (!steps.empty()) result = steps.back();
  }
  f.line("return {};", result);
  close_functor(f);
  return members;
}

// "AttentionOperand{ptr, {s0, s1, s2, s3}}" of a [batch, heads, rows, cols] Access.
Result<std::string> operand(const EmitContext& ctx, const Access& access) {
  if (access.shape.size() != 4) return make_error("attention operand of rank {}", access.shape.size());
  STITCH_ASSIGN_OR_RETURN(std::string pointer, ctx.access_pointer(access));
  return fmt::format("AttentionOperand{{{}, {{{}}}}}", pointer, int_list(access.strides));
}

}  // namespace

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const AttentionSpec& spec,
                 CodeWriter& w) {
  for (const Access* access : {&spec.q, &spec.k, &spec.v})
    if (ctx.type_of(access->base).dtype != ir::DType::float32)
      return make_error("attention on non-float32 operands");
  if (spec.stores.size() != 1) return make_error("attention stores {} values", spec.stores.size());
  const plan::Store& store = spec.stores[0];
  // The output's placement: the plan's (a copy folded into the store), else the stored value's
  // buffer as [batch, heads, queries, value_dim].
  const Access buffer = ctx.store_access(store.value);
  const std::vector<int64_t> out_shape{spec.batch, spec.heads, spec.queries, spec.value_dim};
  std::optional<Access> out = spec.output;
  if (out && buffer != plan::contiguous_access(store.value, ctx.type_of(store.value).shape))
    return make_error("attention output '{}' is placed in a buffer that lives elsewhere",
                      ctx.plan().graph.name_of(store.value));
  if (!out && buffer.is_contiguous()) out = plan::reshape_access(buffer, out_shape);
  if (!out || ctx.type_of(store.value).dtype != ir::DType::float32)
    return make_error("attention output '{}' is not a float32 [batch, heads, queries, dim] buffer",
                      ctx.plan().graph.name_of(store.value));
  const int64_t tile = plan::attention_head_dim_tile(spec);
  if (tile > plan::kAttentionMaxHeadDim || tile < 8)
    return make_error("attention head-dim tile {} outside [8, 128]", tile);
  const std::string score = EmitContext::functor_name(subtask, "score");
  STITCH_ASSIGN_OR_RETURN(Members members, emit_score_functor(ctx, score, spec));
  ctx.pieces().uses_attention = true;
  const std::string_view math = plan::attention_math_name(subtask);
  const bool fma = math == "fp32_fma";
  if (fma) {
    ctx.pieces().kernel_prepare.line("STITCH_CHECK_CUDA((prepare_attention<{}, {}>()));", tile,
                                     score);
  } else {
    ctx.pieces().uses_attention_mma = true;
    ctx.pieces().kernel_prepare.line(
        "STITCH_CHECK_CUDA((prepare_attention_math<{}, {}>(AttentionMath::{})));", tile, score,
        math);
  }
  std::string init;
  append_inits(init, members);
  STITCH_ASSIGN_OR_RETURN(std::string q, operand(ctx, spec.q));
  STITCH_ASSIGN_OR_RETURN(std::string k, operand(ctx, spec.k));
  STITCH_ASSIGN_OR_RETURN(std::string v, operand(ctx, spec.v));
  STITCH_ASSIGN_OR_RETURN(std::string target, ctx.typed_base(out->base, true));
  const std::string output =
      fmt::format("AttentionOutput{{{} + {}, {{{}}}}}", target, out->offset, int_list(out->strides));
  w.line("AttentionShape shape;");
  w.line("shape.batch = {}, shape.heads = {}, shape.queries = {}, shape.keys = {};", spec.batch,
         spec.heads, spec.queries, spec.keys);
  w.line("shape.head_dim = {}, shape.value_dim = {};", spec.head_dim, spec.value_dim);
  w.line("shape.scale = {};", float_literal(spec.scale));
  if (spec.causal) w.line("shape.causal = true;");
  if (spec.norm == plan::AttentionNorm::none) w.line("shape.norm = AttentionNorm::none;");
  // scaled_dot_product_attention's safe softmax: a row with every key masked gives zeros.
  if (ctx.plan().graph.nodes.at(spec.node).op == ir::Op::scaled_dot_product_attention)
    w.line("shape.empty_rows_zero = true;");
  w.line("const {} score{{{}}};", score, init);
  if (fma)
    w.line("STITCH_CHECK_CUDA((launch_attention<{}>(shape, {}, {}, {}, {}, score, stream)));", tile,
           q, k, v, output);
  else
    w.line(
        "STITCH_CHECK_CUDA((launch_attention_math<{}>(AttentionMath::{}, shape, {}, {}, {}, {}, "
        "score, stream)));",
        tile, math, q, k, v, output);
  return {};
}

}  // namespace stitch::codegen
