// Elementwise and copy subtasks (and a GEMM's epilogue pass): one functor over float registers and
// one launch_elementwise (kernels/elementwise.cuh) with the loads as TensorOperands.
#include "codegen/emit_context.h"
#include "plan/access.h"

namespace stitch::codegen {
namespace {

using plan::Access;
using plan::Body;
using plan::Operand;
using plan::Store;
using plan::Subtask;

constexpr int kDefaultElementwiseBlock = 256;  // launch_elementwise's default

// The "block" tunable of an elementwise launch: a multiple of 32 in [32, 1024].
Result<int> elementwise_block(const Subtask& subtask) {
  auto found = subtask.tunables.find("block");
  if (found == subtask.tunables.end()) return kDefaultElementwiseBlock;
  const int64_t block = found->second;
  if (block < 32 || block > 1024 || block % 32 != 0)
    return make_error("subtask {}: block {} is not a multiple of 32 in [32, 1024]", subtask.id,
                      block);
  return static_cast<int>(block);
}

// The functor: y[j] = store j's value of the body over x[] (the loads).
Status emit_body_functor(EmitContext& ctx, const std::string& name, const Body& body,
                         const std::vector<Store>& stores) {
  CodeWriter& f = ctx.pieces().functors;
  const size_t n_in = body.loads.size(), n_out = stores.size();
  f.open("struct {} {{", name);
  if (n_in == 0)  // the library's fill form: no input array
    f.open("__device__ void operator()(float (&y)[{}]) const {{", n_out);
  else
    f.open("__device__ void operator()(const float (&x)[{}], float (&y)[{}]) const {{", n_in,
           n_out);
  std::vector<std::string> loads;
  for (size_t j = 0; j < n_in; ++j) loads.push_back(fmt::format("x[{}]", j));
  STITCH_ASSIGN_OR_RETURN(std::vector<std::string> steps, ctx.emit_steps(f, body, loads, {}, "v"));
  for (size_t j = 0; j < n_out; ++j) {
    STITCH_ASSIGN_OR_RETURN(std::string value, ctx.operand_expr(stores[j].from, loads, steps, {}));
    f.line("y[{}] = {};", j, value);
  }
  close_functor(f);
  return {};
}

// Store j's OutOperand over the index space `shape`: its window (EmitContext::store_access, or a
// cat piece's destination) with strides over `shape`.
Result<std::string> out_operand(const EmitContext& ctx, const std::vector<int64_t>& shape,
                                const Store& store, const Access& window, size_t j) {
  const ir::TensorType& type = ctx.type_of(store.value);
  if (numel(window.shape) != numel(shape))
    return make_error("store {} holds {} elements, the index space {}", j, numel(window.shape),
                      numel(shape));
  std::vector<int64_t> strides = ir::contiguous_strides(shape);
  if (!window.is_contiguous()) {
    const auto over = window.shape == shape ? window : plan::reshape_access(window, shape);
    if (!over)
      return make_error("store {}: its window {} has no strides over [{}]", j,
                        int_list(window.strides), int_list(shape));
    strides = over->strides;
  }
  STITCH_ASSIGN_OR_RETURN(std::string base, ctx.buffer_base(window.base));
  return fmt::format("const OutOperand out{}{{{}, {}, {}, {{{}}}}};", j, base,
                     static_cast<int>(type.dtype), window.offset,
                     shape.empty() ? "1" : int_list(strides));
}

// The operands: loads as TensorOperands (their shapes equal `shape`), stores as OutOperands into
// their windows.
Status emit_operands(const EmitContext& ctx, const std::vector<int64_t>& shape, const Body& body,
                     const std::vector<Store>& stores, const std::vector<Access>& windows,
                     CodeWriter& w) {
  const int rank = static_cast<int>(shape.size());
  w.line("const int64_t shape[{}] = {{{}}};", std::max(rank, 1), rank ? int_list(shape) : "1");
  for (size_t j = 0; j < body.loads.size(); ++j) {
    const Access& load = body.loads[j];
    if (load.shape != shape)
      return make_error("elementwise load {} has shape [{}], the index space is [{}]", j,
                        int_list(load.shape), int_list(shape));
    STITCH_ASSIGN_OR_RETURN(std::string base, ctx.buffer_base(load.base));
    w.line("const TensorOperand in{}{{{}, {}, {}, {{{}}}}};", j, base,
           static_cast<int>(ctx.type_of(load.base).dtype), load.offset,
           rank ? int_list(load.strides) : "0");
  }
  for (size_t j = 0; j < stores.size(); ++j) {
    STITCH_ASSIGN_OR_RETURN(std::string line, out_operand(ctx, shape, stores[j], windows[j], j));
    w.line("{}", line);
  }
  return {};
}

// emit_library_elementwise with the stores' windows given.
Status emit_elementwise_into(EmitContext& ctx, const Subtask& subtask, const std::string& role,
                             const std::vector<int64_t>& shape, const Body& body,
                             const std::vector<Store>& stores, const std::vector<Access>& windows,
                             CodeWriter& w) {
  const size_t n_in = body.loads.size(), n_out = stores.size();
  if (n_out == 0) return make_error("an elementwise body with nothing to store");
  const std::string name = EmitContext::functor_name(subtask, role);
  STITCH_TRY(emit_body_functor(ctx, name, body, stores));
  STITCH_TRY(emit_operands(ctx, shape, body, stores, windows, w));
  const int padded_rank = std::max(static_cast<int>(shape.size()), 1);
  std::string in_list, out_list;
  for (size_t j = 0; j < n_in; ++j) in_list += (j ? ", " : "") + fmt::format("in{}", j);
  for (size_t j = 0; j < n_out; ++j) out_list += (j ? ", " : "") + fmt::format("out{}", j);
  w.line("const OutOperand outs[{}] = {{{}}};", n_out, out_list);
  // Threads per block: the subtask's "block" tunable (refine tries others); the library's
  // default (256) is left implicit.
  STITCH_ASSIGN_OR_RETURN(int block, elementwise_block(subtask));
  const std::string block_arg = block == kDefaultElementwiseBlock ? "" : fmt::format(", {}", block);
  if (n_in == 0) {
    w.line("STITCH_CHECK_CUDA((launch_elementwise<0, {}>({}{{}}, nullptr, outs, {}, shape, "
           "stream{})));",
           n_out, name, padded_rank, block_arg);
  } else {
    w.line("const TensorOperand ins[{}] = {{{}}};", n_in, in_list);
    w.line("STITCH_CHECK_CUDA(launch_elementwise({}{{}}, ins, outs, {}, shape, stream{}));", name,
           padded_rank, block_arg);
  }
  return {};
}

}  // namespace

Status emit_library_elementwise(EmitContext& ctx, const Subtask& subtask, const std::string& role,
                                const std::vector<int64_t>& shape, const Body& body,
                                const std::vector<Store>& stores, CodeWriter& w) {
  std::vector<Access> windows;
  for (const Store& store : stores)
    windows.push_back(ctx.store_access(store.value));
  return emit_elementwise_into(ctx, subtask, role, shape, body, stores, windows, w);
}

Status emit_spec(EmitContext& ctx, const Subtask& subtask,
                                const plan::ElementwiseSpec& spec, CodeWriter& w) {
  return emit_library_elementwise(ctx, subtask, "body", spec.shape, spec.body, spec.stores, w);
}

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const plan::CopySpec& spec,
                         CodeWriter& w) {
  Body body;
  body.loads.push_back(spec.source);
  Store store{spec.target, Operand{Operand::Kind::load, 0, 0}};
  // A cat piece lands in its destination window; a whole copy in the target's buffer.
  const Access window = spec.destination ? *spec.destination : ctx.store_access(spec.target);
  if (window.shape != spec.source.shape && spec.destination)
    return make_error("a cat piece [{}] copied into a window [{}]", int_list(spec.source.shape),
                      int_list(window.shape));
  return emit_elementwise_into(ctx, subtask, "copy", spec.source.shape, body, {store}, {window},
                               w);
}

}  // namespace stitch::codegen
