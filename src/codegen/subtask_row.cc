// Row subtasks (softmax, log-softmax, LayerNorm, RMSNorm over [rows, cols]): a load functor (the
// fused producers), a store functor (the fused consumers) and one launch of kernels/row.cuh.
#include "codegen/emit_context.h"
#include "codegen/emit_elementwise.h"

namespace stitch::codegen {
namespace {

using plan::Access;
using plan::RowSpec;
using plan::Subtask;

// The store functor: the row op's value `y` (the epilogue's load 0), the extra loads, the steps,
// the stores. Returns its members (extra loads, then stores).
Result<Members> emit_store_functor(EmitContext& ctx, const std::string& name, const RowSpec& spec) {
  std::vector<Access> extra;
  if (spec.epilogue)
    extra.assign(spec.epilogue->loads.begin() + std::min<size_t>(1, spec.epilogue->loads.size()),
                 spec.epilogue->loads.end());
  STITCH_ASSIGN_OR_RETURN(Members members, ctx.pointer_members(extra, "l"));
  STITCH_ASSIGN_OR_RETURN(Members stores, ctx.store_members(spec.stores));
  CodeWriter& f = ctx.pieces().functors;
  open_functor(f, name, {&members, &stores},
               "__device__ void operator()(int64_t row, int64_t col, float y) const");
  f.line("const int64_t e = row * {} + col;", spec.cols);
  std::vector<std::string> epi_loads = {"y"};
  for (std::string& x : emit_load_lines(f, extra, {spec.rows, spec.cols}, {"row", "col"}))
    epi_loads.push_back(std::move(x));
  std::vector<std::string> steps;
  if (spec.epilogue) {
    STITCH_ASSIGN_OR_RETURN(steps, ctx.emit_steps(f, *spec.epilogue, epi_loads, {}, "v"));
  }
  for (size_t j = 0; j < spec.stores.size(); ++j)
    STITCH_TRY(ctx.emit_store_line(f, spec.stores[j], j, epi_loads, steps, {}));
  close_functor(f);
  members.insert(members.end(), stores.begin(), stores.end());
  return members;
}

}  // namespace

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const RowSpec& spec,
                        CodeWriter& w) {
  const std::string load = EmitContext::functor_name(subtask, "load");
  STITCH_ASSIGN_OR_RETURN(
      Members load_members,
      emit_load_functor(ctx, load, "__device__ float operator()(int64_t row, int64_t col) const",
                        fmt::format("const int64_t e = row * {} + col;", spec.cols),
                        spec.prologue ? spec.prologue->loads : std::vector{spec.input},
                        {spec.rows, spec.cols}, {"row", "col"}, spec.prologue));
  const std::string store = EmitContext::functor_name(subtask, "store");
  STITCH_ASSIGN_OR_RETURN(Members store_members, emit_store_functor(ctx, store, spec));
  std::string load_init, store_init;
  append_inits(load_init, load_members);
  append_inits(store_init, store_members);
  w.line("const {} load{{{}}};", load, load_init);
  w.line("const {} store{{{}}};", store, store_init);
  std::string weight = "nullptr", bias = "nullptr";
  if (spec.weight) {
    STITCH_ASSIGN_OR_RETURN(weight, ctx.access_pointer(*spec.weight));
  }
  if (spec.bias) {
    STITCH_ASSIGN_OR_RETURN(bias, ctx.access_pointer(*spec.bias));
  }
  switch (spec.op) {
    case plan::RowOp::softmax:
    case plan::RowOp::log_softmax:
      w.line("STITCH_CHECK_CUDA(launch_softmax({}, {}, {}, load, store, stream));", spec.rows,
             spec.cols, spec.op == plan::RowOp::log_softmax);
      break;
    case plan::RowOp::layer_norm:
      w.line("STITCH_CHECK_CUDA(launch_layer_norm({}, {}, {}, {}, {}, load, store, stream));",
             spec.rows, spec.cols, float_literal(spec.eps), weight, bias);
      break;
    case plan::RowOp::rms_norm:
      w.line("STITCH_CHECK_CUDA(launch_rms_norm({}, {}, {}, {}, load, store, stream));", spec.rows,
             spec.cols, float_literal(spec.eps), weight);
      break;
  }
  return {};
}

}  // namespace stitch::codegen
