// Reduction subtasks: a prologue functor (loads, then the fused producers), an epilogue functor
// (the reduced values as registers, then the fused consumers and the stores) and one launch_reduce
// (kernels/reduction.cuh) sharing the program's reduction scratch.

#include "codegen/emit_context.h"
#include "codegen/emit_elementwise.h"

namespace stitch::codegen {
namespace {

using plan::Access;
using plan::Operand;
using plan::ReduceOp;
using plan::ReductionSpec;
using plan::Store;
using plan::Subtask;

bool is_arg_reduction(ReduceOp op) { return op == ReduceOp::argmax || op == ReduceOp::argmin; }

// The register values the epilogue sees: output k of the reduction node, from `result`.
std::vector<std::string> result_values(CodeWriter& f, const ReductionSpec& spec, size_t n_results) {
  std::vector<std::string> results;
  switch (spec.op) {
    case ReduceOp::argmax:
    case ReduceOp::argmin:
      if (n_results == 2) results = {"result.value", "static_cast<float>(result.index)"};
      else results = {"static_cast<float>(result.index)"};
      break;
    case ReduceOp::mean_var:
      f.line("const float var = result.m2 / static_cast<float>(result.count - {});",
             float_literal(spec.correction));
      results = {"var", "result.mean"};
      break;
    default: results = {"result"};
  }
  while (results.size() < n_results) results.push_back(results.back());
  results.resize(n_results);
  return results;
}

// The epilogue functor; returns its members (extra loads, then stores).
Result<Members> emit_epilogue_functor(EmitContext& ctx, const std::string& name,
                                      const ReductionSpec& spec) {
  const ir::Node& node = ctx.plan().graph.nodes.at(spec.node);
  const size_t n_results = node.outputs.size();
  std::vector<Access> extra_loads;
  if (spec.epilogue)
    for (size_t j = n_results; j < spec.epilogue->loads.size(); ++j)
      extra_loads.push_back(spec.epilogue->loads[j]);
  STITCH_ASSIGN_OR_RETURN(Members members, ctx.pointer_members(extra_loads, "l"));
  STITCH_ASSIGN_OR_RETURN(Members stores, ctx.store_members(spec.stores));
  const std::string result_type = is_arg_reduction(spec.op)         ? "ValueIndex"
                                  : spec.op == ReduceOp::mean_var ? "MeanVar"
                                                                  : "float";
  CodeWriter& f = ctx.pieces().functors;
  open_functor(f, name, {&members, &stores},
               fmt::format("__device__ void operator()(int64_t o, int64_t i, {} result) const",
                           result_type));
  f.line("const int64_t e = o * {} + i;", spec.inner);
  std::vector<std::string> epi_loads = result_values(f, spec, n_results);
  for (std::string& x : emit_load_lines(f, extra_loads, {spec.outer, spec.inner}, {"o", "i"}))
    epi_loads.push_back(std::move(x));
  std::vector<std::string> steps;
  const std::vector<std::string> index_values = {fmt::format("{}.0f", spec.reduce)};
  if (spec.epilogue) {
    STITCH_ASSIGN_OR_RETURN(steps, ctx.emit_steps(f, *spec.epilogue, epi_loads, index_values, "v"));
  }
  for (size_t j = 0; j < spec.stores.size(); ++j) {
    const Store& store = spec.stores[j];
    // Indices are stored exactly, not through float.
    const bool index_store = is_arg_reduction(spec.op) && store.from.kind == Operand::Kind::load &&
                             store.from.index == static_cast<int>(n_results) - 1 &&
                             ctx.type_of(store.value).dtype == ir::DType::int64;
    if (index_store) {
      f.line("out{}[{}] = result.index;", j, ctx.store_index(store.value, "e"));
      continue;
    }
    // A one-element value in a larger index space (fusion rule F9) is stored once, by output 0.
    const bool once = ctx.type_of(store.value).numel() == 1 && spec.outer * spec.inner > 1;
    if (once) f.open("if (e == 0) {{");
    STITCH_TRY(ctx.emit_store_line(f, store, j, epi_loads, steps, index_values));
    if (once) f.close();
  }
  close_functor(f);
  members.insert(members.end(), stores.begin(), stores.end());
  return members;
}

}  // namespace

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const ReductionSpec& spec,
                              CodeWriter& w) {
  const std::string pro = EmitContext::functor_name(subtask, "prologue");
  STITCH_ASSIGN_OR_RETURN(
      Members pro_members,
      emit_load_functor(ctx, pro, "__device__ float operator()(int64_t o, int64_t r, int64_t i) const",
                        fmt::format("const int64_t e = (o * {} + r) * {} + i;", spec.reduce,
                                    spec.inner),
                        spec.prologue ? spec.prologue->loads : std::vector{spec.input},
                        {spec.outer, spec.reduce, spec.inner}, {"o", "r", "i"}, spec.prologue));
  const std::string epi = EmitContext::functor_name(subtask, "epilogue");
  STITCH_ASSIGN_OR_RETURN(Members epi_members, emit_epilogue_functor(ctx, epi, spec));
  std::string pro_init, epi_init;
  append_inits(pro_init, pro_members);
  append_inits(epi_init, epi_members);
  ctx.pieces().reductions.push_back(
      fmt::format("{{{}, {}, {}}}", spec.outer, spec.reduce, spec.inner));
  w.line("const {} pro{{{}}};", pro, pro_init);
  w.line("const {} epi{{{}}};", epi, epi_init);
  w.line("STITCH_CHECK_CUDA((launch_reduce<ReduceOp::{}>({}, {}, {}, pro, epi, s->reduce_scratch, "
         "stream)));",
         plan::kReduceOpNames[static_cast<int>(spec.op)], spec.outer, spec.reduce, spec.inner);
  return {};
}

}  // namespace stitch::codegen
