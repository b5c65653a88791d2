// Scan subtasks: a load functor (the scanned tensor through its strides, then the fused
// prologue), a store functor (the scanned value as a register, then the fused epilogue and the
// stores) and one launch_scan (kernels/scan.cuh) with the strategy the Planner chose.
#include "codegen/emit_context.h"
#include "codegen/emit_elementwise.h"

namespace stitch::codegen {
namespace {

using plan::Access;
using plan::ScanSpec;
using plan::Subtask;

// The store functor; returns its members (extra loads, then stores).
Result<Members> emit_store_functor(EmitContext& ctx, const std::string& name,
                                   const ScanSpec& spec) {
  std::vector<Access> extra_loads;
  if (spec.epilogue)
    extra_loads.assign(spec.epilogue->loads.begin() + 1, spec.epilogue->loads.end());
  STITCH_ASSIGN_OR_RETURN(Members members, ctx.pointer_members(extra_loads, "l"));
  STITCH_ASSIGN_OR_RETURN(Members stores, ctx.store_members(spec.stores));
  CodeWriter& f = ctx.pieces().functors;
  open_functor(f, name, {&members, &stores},
               "__device__ void operator()(int64_t o, int64_t r, int64_t i, float value) const");
  f.line("const int64_t e = (o * {} + r) * {} + i;", spec.length, spec.inner);
  std::vector<std::string> loads = {"value"};
  for (std::string& x :
       emit_load_lines(f, extra_loads, {spec.outer, spec.length, spec.inner}, {"o", "r", "i"}))
    loads.push_back(std::move(x));
  std::vector<std::string> steps;
  if (spec.epilogue) {
    STITCH_ASSIGN_OR_RETURN(steps, ctx.emit_steps(f, *spec.epilogue, loads, {}, "v"));
  }
  for (size_t j = 0; j < spec.stores.size(); ++j)
    STITCH_TRY(ctx.emit_store_line(f, spec.stores[j], j, loads, steps, {}));
  close_functor(f);
  members.insert(members.end(), stores.begin(), stores.end());
  return members;
}

}  // namespace

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const ScanSpec& spec, CodeWriter& w) {
  const auto strategy = subtask.tunables.find("scan_strategy");
  if (strategy == subtask.tunables.end() || strategy->second < 0 || strategy->second > 1)
    return make_error("scan without a scan_strategy tunable (0 or 1)");
  if (strategy->second == 0 && spec.inner != 1)
    return make_error("scan strategy warp_rows needs inner == 1, not {}", spec.inner);
  ctx.pieces().uses_scan = true;
  const std::string load = EmitContext::functor_name(subtask, "load");
  STITCH_ASSIGN_OR_RETURN(
      Members load_members,
      emit_load_functor(
          ctx, load, "__device__ float operator()(int64_t o, int64_t r, int64_t i) const",
          fmt::format("const int64_t e = (o * {} + r) * {} + i;", spec.length, spec.inner),
          spec.prologue ? spec.prologue->loads : std::vector{spec.input},
          {spec.outer, spec.length, spec.inner}, {"o", "r", "i"}, spec.prologue));
  const std::string store = EmitContext::functor_name(subtask, "store");
  STITCH_ASSIGN_OR_RETURN(Members store_members, emit_store_functor(ctx, store, spec));
  std::string load_init, store_init;
  append_inits(load_init, load_members);
  append_inits(store_init, store_members);
  w.line("const {} load{{{}}};", load, load_init);
  w.line("const {} store{{{}}};", store, store_init);
  w.line(
      "STITCH_CHECK_CUDA((launch_scan<ScanKind::{}>(ScanStrategy::{}, {}, {}, {}, {}, {}, load, "
      "store, stream, {})));",
      plan::kScanOpNames[static_cast<int>(spec.op)],
      strategy->second == 0 ? "warp_rows" : "columns", spec.outer, spec.length, spec.inner,
      spec.reverse ? "true" : "false", spec.exclusive ? "true" : "false",
      subtask.tunables.count("block") ? subtask.tunables.at("block") : int64_t{256});
  return {};
}

}  // namespace stitch::codegen
