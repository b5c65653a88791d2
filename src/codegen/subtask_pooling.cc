// Pooling subtasks: a load functor that reads the input through its strides (the leading dims of
// the planes unravelled), a store functor (the pooled value and the maximum's index as registers,
// then the fused epilogue and the stores) and one launch_pool (kernels/pooling.cuh), whose threads
// take the outputs channels fastest where the input is channels-last (plan/layout.h).
#include "codegen/emit_context.h"
#include "codegen/emit_elementwise.h"
#include "plan/access.h"

namespace stitch::codegen {
namespace {

using plan::Access;
using plan::BodyStep;
using plan::Operand;
using plan::PoolOp;
using plan::PoolSpec;
using plan::Store;
using plan::Subtask;


// Input element (o, d, h, w): the plane's offset from `o` (one stride when the leading dims merge,
// else unravelled), plus the spatial strides (missing leading spatial dims are size 1).
std::string input_index(const PoolSpec& spec, int64_t planes) {
  const size_t lead = spec.input.shape.size() - spec.out.size();
  Access plane{spec.input.base,
               spec.input.offset,
               {spec.input.shape.begin(), spec.input.shape.begin() + lead},
               {spec.input.strides.begin(), spec.input.strides.begin() + lead}};
  if (auto merged = plan::reshape_access(plane, {planes})) plane = *merged;  // one plane stride
  std::string expr = index_expr(plane, {planes}, {"o"}, "o");
  static constexpr const char* kCoords[] = {"d", "h", "w"};
  for (size_t k = 0; k < spec.out.size(); ++k) {
    const int64_t stride = spec.input.strides[lead + k];
    if (stride != 0) expr += fmt::format(" + {} * {}", kCoords[3 - spec.out.size() + k], stride);
  }
  return expr;
}

Result<Members> emit_load(EmitContext& ctx, const std::string& name, const PoolSpec& spec,
                          int64_t planes) {
  STITCH_ASSIGN_OR_RETURN(Members members, ctx.pointer_members({spec.input}, "l"));
  CodeWriter& f = ctx.pieces().functors;
  open_functor(f, name, {&members},
               "__device__ float operator()(int64_t o, int64_t d, int64_t h, int64_t w) const");
  f.line("(void)d;");
  f.line("(void)h;");
  f.line("return static_cast<float>(l0[{}]);", input_index(spec, planes));
  close_functor(f);
  return members;
}

// Whether a store or the epilogue reads the maximum's index (the pool's result 1, load 1).
bool reads_index(const PoolSpec& spec, size_t n_results) {
  if (n_results < 2) return false;
  auto is_index = [](const Operand& operand) {
    return operand.kind == Operand::Kind::load && operand.index == 1;
  };
  for (const Store& store : spec.stores)
    if (is_index(store.from)) return true;
  if (spec.epilogue)
    for (const BodyStep& step : spec.epilogue->steps)
      for (const Operand& operand : step.operands)
        if (is_index(operand)) return true;
  return false;
}

// The store functor; returns its members (extra loads, then stores). One that no index reaches
// says so (kStoresIndex): launch_pool may then run a max pool on its strip path.
Result<Members> emit_store(EmitContext& ctx, const std::string& name, const PoolSpec& spec) {
  const ir::Node& node = ctx.plan().graph.nodes.at(spec.node);
  const size_t n_results = node.outputs.size();
  std::vector<Access> extra_loads;
  if (spec.epilogue)
    for (size_t j = n_results; j < spec.epilogue->loads.size(); ++j)
      extra_loads.push_back(spec.epilogue->loads[j]);
  STITCH_ASSIGN_OR_RETURN(Members members, ctx.pointer_members(extra_loads, "l"));
  STITCH_ASSIGN_OR_RETURN(Members stores, ctx.store_members(spec.stores));
  CodeWriter& f = ctx.pieces().functors;
  Members declared;  // declared only: no initialiser at the launch
  if (!reads_index(spec, n_results))
    declared.push_back({"static constexpr bool kStoresIndex = false;", ""});
  open_functor(f, name, {&declared, &members, &stores},
               "__device__ void operator()(int64_t e, float value, int64_t index) const");
  f.line("(void)index;");
  std::vector<std::string> loads = {"value", "static_cast<float>(index)"};
  loads.resize(n_results);
  for (std::string& x : emit_load_lines(f, extra_loads, {node.outputs[0].numel()}, {"e"}))
    loads.push_back(std::move(x));
  std::vector<std::string> steps;
  if (spec.epilogue) {
    STITCH_ASSIGN_OR_RETURN(steps, ctx.emit_steps(f, *spec.epilogue, loads, {}, "v"));
  }
  for (size_t j = 0; j < spec.stores.size(); ++j) {
    const Store& store = spec.stores[j];
    // Indices are stored exactly, not through float.
    if (store.from.kind == Operand::Kind::load && store.from.index == 1 &&
        ctx.type_of(store.value).dtype == ir::DType::int64) {
      f.line("out{}[{}] = index;", j, ctx.store_index(store.value, "e"));
      continue;
    }
    STITCH_TRY(ctx.emit_store_line(f, store, j, loads, steps, {}));
  }
  close_functor(f);
  members.insert(members.end(), stores.begin(), stores.end());
  return members;
}

// `shape.<field>[k] = v;` for the spatial dims, right-aligned in [d, h, w].
void set_dims(CodeWriter& w, const char* field, const std::vector<int64_t>& values) {
  for (size_t k = 0; k < values.size(); ++k)
    w.line("shape.{}[{}] = {};", field, 3 - values.size() + k, values[k]);
}

// launch_pool's compile-time window size (", KH, KW") for a 2-d max or avg pool's window of up to
// kUnrolledWindow cells a side: the tiled kernel then unrolls its loops over the window.
std::string window_arguments(const PoolSpec& spec) {
  constexpr int64_t kUnrolledWindow = 7;
  if ((spec.op != PoolOp::max && spec.op != PoolOp::avg) || spec.kernel.size() != 2) return "";
  for (const int64_t k : spec.kernel)
    if (k < 1 || k > kUnrolledWindow) return "";
  return fmt::format(", {}, {}", spec.kernel[0], spec.kernel[1]);
}

}  // namespace

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const PoolSpec& spec, CodeWriter& w) {
  if (spec.out.empty() || spec.out.size() > 3 || spec.input.shape.size() <= spec.out.size())
    return make_error("pool over {} of {} dims", spec.out.size(), spec.input.shape.size());
  ctx.pieces().uses_pool = true;
  const size_t lead = spec.input.shape.size() - spec.out.size();
  int64_t planes = 1;
  for (size_t d = 0; d < lead; ++d)
    planes *= spec.input.shape[d];
  const std::string load = EmitContext::functor_name(subtask, "load");
  STITCH_ASSIGN_OR_RETURN(Members load_members, emit_load(ctx, load, spec, planes));
  const std::string store = EmitContext::functor_name(subtask, "store");
  STITCH_ASSIGN_OR_RETURN(Members store_members, emit_store(ctx, store, spec));
  std::string load_init, store_init;
  append_inits(load_init, load_members);
  append_inits(store_init, store_members);
  w.line("PoolShape shape;");
  w.line("shape.outer = {};", planes);
  set_dims(w, "in", {spec.input.shape.begin() + lead, spec.input.shape.end()});
  set_dims(w, "out", spec.out);
  if (!spec.kernel.empty()) {
    set_dims(w, "kernel", spec.kernel);
    set_dims(w, "stride", spec.stride);
    set_dims(w, "pad", spec.padding);
    set_dims(w, "dilation", spec.dilation);
  }
  if (spec.op == PoolOp::avg) {
    w.line("shape.count_include_pad = {};", spec.count_include_pad ? "true" : "false");
    w.line("shape.divisor = {};", spec.divisor);
  }
  const size_t pad = 3 - spec.scale.size();  // leading unit dims
  for (size_t k = 0; k < spec.scale.size() && spec.scale.size() <= 3; ++k)
    w.line("shape.scale[{}] = {};", pad + k, float_literal(spec.scale[k]));
  if (spec.align_corners) w.line("shape.align_corners = true;");
  // A channels-last input is read in its own order: channels fastest, coalesced.
  if (lead == 2 && plan::is_channels_last(spec.input) && !spec.input.is_contiguous())
    w.line("shape.channels = {};", spec.input.shape[1]);
  w.line("const {} load{{{}}};", load, load_init);
  w.line("const {} store{{{}}};", store, store_init);
  w.line("STITCH_CHECK_CUDA((launch_pool<PoolKind::{}{}>(shape, load, store, stream, {})));",
         plan::kPoolOpNames[static_cast<int>(spec.op)], window_arguments(spec),
         subtask.tunables.count("block") ? subtask.tunables.at("block") : int64_t{256});
  return {};
}

}  // namespace stitch::codegen
