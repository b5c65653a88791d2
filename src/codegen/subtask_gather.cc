// Gather subtasks: one functor per gather that reads the index (index[j], or index[o, j, i] for
// torch.gather), wraps it, reads the input through its strides and stores (an index outside the
// dim stores NaN rather than reading out of bounds), and one launch_gather (kernels/gather.cuh).
#include "codegen/emit_context.h"

namespace stitch::codegen {

Status emit_spec(EmitContext& ctx, const plan::Subtask& subtask, const plan::GatherSpec& spec,
                 CodeWriter& w) {
  if (spec.stores.size() != 1) return make_error("a gather stores its one value");
  ctx.pieces().uses_gather = true;
  STITCH_ASSIGN_OR_RETURN(Members members, ctx.pointer_members({spec.input, spec.index}, "l"));
  STITCH_ASSIGN_OR_RETURN(Members stores, ctx.store_members(spec.stores));
  const std::string name = EmitContext::functor_name(subtask, "gather");
  CodeWriter& f = ctx.pieces().functors;
  open_functor(f, name, {&members, &stores},
               "__device__ void operator()(int64_t o, int64_t j, int64_t i) const");
  f.line("const int64_t e = (o * {} + j) * {} + i;", spec.count, spec.inner);
  f.line("int64_t k = static_cast<int64_t>(l1[{}]);",
         spec.per_element
             ? index_expr(spec.index, {spec.outer, spec.count, spec.inner}, {"o", "j", "i"}, "e")
             : index_expr(spec.index, {spec.count}, {"j"}, "j"));
  f.line("if (k < 0) k += {};", spec.size);
  f.line("const float x0 = k >= 0 && k < {} ? static_cast<float>(l0[{}]) : NAN;", spec.size,
         index_expr(spec.input, {spec.outer, spec.size, spec.inner}, {"o", "k", "i"},
                    fmt::format("((o * {} + k) * {} + i)", spec.size, spec.inner)));
  STITCH_TRY(ctx.emit_store_line(f, spec.stores[0], 0, {"x0"}, {}, {}));
  close_functor(f);
  members.insert(members.end(), stores.begin(), stores.end());
  std::string init;
  append_inits(init, members);
  w.line("const {} gather{{{}}};", name, init);
  w.line("STITCH_CHECK_CUDA((launch_gather({}, {}, {}, gather, stream, {})));", spec.outer,
         spec.count, spec.inner,
         subtask.tunables.count("block") ? subtask.tunables.at("block") : int64_t{256});
  return {};
}

}  // namespace stitch::codegen
