// emit_program: plan → program.cu. Layout of the emitted file, top to bottom: includes; one functor
// per fused body (elementwise bodies, GEMM epilogues, reduction prologue/epilogue, row load/store);
// the State; run_subtasks (one block per subtask, in plan order); the ABI functions. Shapes and
// strides are baked in as literals (the plan is for one shape); only pointers are runtime values.
#include "codegen/program_emitter.h"

#include <map>
#include <numeric>
#include <set>

#include "codegen/code_writer.h"
#include "codegen/emit_elementwise.h"

namespace stitch::codegen {
namespace {

using plan::Access;
using plan::Body;
using plan::Operand;
using plan::Plan;
using plan::Store;
using plan::Subtask;

int64_t align256(int64_t bytes) { return (bytes + 255) / 256 * 256; }

std::string c_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::float32: return "float";
    case ir::DType::float64: return "double";
    case ir::DType::int64: return "int64_t";
    case ir::DType::int32: return "int32_t";
    case ir::DType::int16: return "int16_t";
    case ir::DType::int8: return "int8_t";
    case ir::DType::uint8: return "uint8_t";
    case ir::DType::boolean: return "bool";
    default: return "";
  }
}

std::string int_list(const std::vector<int64_t>& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return text;
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& shape) {
  return ir::contiguous_strides(shape);
}

int64_t numel(const std::vector<int64_t>& shape) {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

// Element index of `access` for index-space coordinates `coords` of shape `space`. When the load's
// shape is the index space's, the strides apply to the coordinates directly; otherwise the
// row-major linear index `linear` is unravelled by the load's own shape (planner contract).
std::string index_expr(const Access& access, const std::vector<int64_t>& space,
                       const std::vector<std::string>& coords, const std::string& linear) {
  std::string expr = std::to_string(access.offset);
  if (access.shape == space) {
    for (size_t d = 0; d < coords.size(); ++d)
      if (access.strides[d] != 0 && access.shape[d] != 1)
        expr += fmt::format(" + {} * {}", coords[d], access.strides[d]);
    return expr;
  }
  // Unravel: coordinate d = (linear / prod(shape[d+1:])) % shape[d].
  int64_t inner = 1;
  for (int d = static_cast<int>(access.shape.size()) - 1; d >= 0; --d) {
    if (access.strides[d] != 0 && access.shape[d] != 1)
      expr += fmt::format(" + (({} / {}) % {}) * {}", linear, inner, access.shape[d],
                          access.strides[d]);
    inner *= access.shape[d];
  }
  return expr;
}

class ProgramEmitter {
 public:
  ProgramEmitter(const Plan& plan, const EmitOptions& options) : plan_(plan), options_(options) {}

  Result<EmittedProgram> emit() {
    STITCH_TRY(index_buffers());
    for (size_t k = 0; k < plan_.subtasks.size(); ++k) STITCH_TRY(emit_subtask(k));
    EmittedProgram program;
    program.source = assemble();
    if (uses_matmul_) program.libraries.push_back("cublasLt");
    return program;
  }

 private:
  // ---- buffers ------------------------------------------------------------------------------

  Status index_buffers() {
    for (const auto& slot : plan_.buffers) slots_[slot.value] = &slot;
    // Params follow the at-init results in the persistent block.
    int64_t offset = align256(plan_.host.persistent_bytes);
    for (const auto& param : plan_.graph.params) {
      param_offsets_.push_back(offset);
      offset += align256(std::max<int64_t>(param.type.bytes(), 1));
    }
    persistent_total_ = offset;
    return {};
  }

  const ir::TensorType& type_of(const ir::ValueRef& ref) const { return plan_.graph.type_of(ref); }

  // A char* expression for the start of the buffer that owns `ref` (inside run_subtasks/init).
  Result<std::string> buffer_base(const ir::ValueRef& ref) const {
    switch (ref.kind) {
      case ir::ValueRef::Kind::input:
        return fmt::format("static_cast<char*>(inputs[{}].data)", ref.index);
      case ir::ValueRef::Kind::param:
        return fmt::format("(s->persistent + {})", param_offsets_.at(ref.index));
      case ir::ValueRef::Kind::node: break;
    }
    std::string name = plan_.graph.name_of(ref);
    auto found = slots_.find(name);
    if (found == slots_.end()) return make_error("value '{}' has no buffer in the plan", name);
    const plan::BufferSlot& slot = *found->second;
    switch (slot.where) {
      case plan::BufferSlot::Where::arena:
        return fmt::format("(s->arena_base + {})", slot.offset);
      case plan::BufferSlot::Where::output:
        return fmt::format("static_cast<char*>(outputs[{}].data)", slot.offset);
      case plan::BufferSlot::Where::persistent:
        return fmt::format("(s->persistent + {})", slot.offset);
    }
    return make_error("value '{}': unknown buffer kind", name);
  }

  // Typed element pointer to `access`'s base (offset not applied).
  Result<std::string> typed_base(const ir::ValueRef& ref, bool writable = false) const {
    STITCH_ASSIGN_OR_RETURN(std::string base, buffer_base(ref));
    std::string type = c_type(type_of(ref).dtype);
    if (type.empty())
      return make_error("value '{}' has dtype {}, outside what the emitter handles",
                        plan_.graph.name_of(ref), ir::dtype_name(type_of(ref).dtype));
    return fmt::format("reinterpret_cast<{}{}*>({})", writable ? "" : "const ", type, base);
  }

  // ---- bodies -------------------------------------------------------------------------------

  // Renders body steps into `w` as `const float vN = ...;` given load expressions; returns the
  // expression of every step (its variable name).
  Result<std::vector<std::string>> emit_steps(CodeWriter& w, const Body& body,
                                              const std::vector<std::string>& loads,
                                              const std::vector<std::string>& index_values,
                                              const std::string& prefix) const {
    std::vector<std::string> steps;
    for (size_t k = 0; k < body.steps.size(); ++k) {
      const plan::BodyStep& step = body.steps[k];
      if (step.node < 0 || step.node >= static_cast<int>(plan_.graph.nodes.size()))
        return make_error("body step {} refers to node {}", k, step.node);
      std::vector<std::string> operands;
      for (const Operand& operand : step.operands) {
        STITCH_ASSIGN_OR_RETURN(std::string text,
                                operand_expr(operand, loads, steps, index_values));
        operands.push_back(text);
      }
      STITCH_ASSIGN_OR_RETURN(std::string expr,
                              render_elementwise(plan_.graph.nodes[step.node], operands));
      std::string name = fmt::format("{}{}", prefix, k);
      w.line("const float {} = {};  // {}", name, expr, plan_.graph.nodes[step.node].id);
      steps.push_back(name);
    }
    return steps;
  }

  Result<std::string> operand_expr(const Operand& operand, const std::vector<std::string>& loads,
                                   const std::vector<std::string>& steps,
                                   const std::vector<std::string>& index_values) const {
    switch (operand.kind) {
      case Operand::Kind::load:
        if (operand.index < 0 || operand.index >= static_cast<int>(loads.size()))
          return make_error("operand refers to load {} of {}", operand.index, loads.size());
        return loads[operand.index];
      case Operand::Kind::step:
        if (operand.index < 0 || operand.index >= static_cast<int>(steps.size()))
          return make_error("operand refers to step {} before it is computed", operand.index);
        return steps[operand.index];
      case Operand::Kind::scalar: return float_literal(operand.scalar);
      case Operand::Kind::index:
        if (operand.index < 0 || operand.index >= static_cast<int>(index_values.size()))
          return make_error("operand refers to index value {}", operand.index);
        return index_values[operand.index];
    }
    return make_error("unknown operand kind");
  }

  // Assigns `value` (a float expression) to store `k`'s buffer at linear index `linear`.
  Result<std::string> store_statement(const Store& store, const std::string& member,
                                      const std::string& linear, const std::string& value) const {
    ir::DType dtype = type_of(store.value).dtype;
    if (dtype == ir::DType::boolean)
      return fmt::format("{}[{}] = ({} != 0.0f);", member, linear, value);
    if (dtype == ir::DType::float32) return fmt::format("{}[{}] = {};", member, linear, value);
    return fmt::format("{}[{}] = static_cast<{}>({});", member, linear, c_type(dtype), value);
  }

  // ---- subtasks -----------------------------------------------------------------------------

  Status emit_subtask(size_t k) {
    const Subtask& subtask = plan_.subtasks[k];
    CodeWriter& w = subtask.at_init ? init_body_ : forward_body_;
    w.line("// {} ({}): nodes {}", subtask.id, subtask.kernel, node_ids(subtask));
    w.open("{{");
    Status status = std::visit(
        [&](const auto& spec) -> Status { return emit_spec(subtask, spec, w); }, subtask.spec);
    if (!status.ok()) return status.error().with_context("subtask " + subtask.id);
    w.close();
    return {};
  }

  std::string node_ids(const Subtask& subtask) const {
    std::string ids;
    for (int node : subtask.nodes) {
      if (!ids.empty()) ids += ", ";
      if (ids.size() > 80) return ids + "...";
      ids += plan_.graph.nodes[node].id;
    }
    return ids;
  }

  static constexpr int kDefaultElementwiseBlock = 256;  // launch_elementwise's default

  // The "block" tunable of an elementwise launch: a multiple of 32 in [32, 1024].
  static Result<int> elementwise_block(const Subtask& subtask) {
    auto found = subtask.tunables.find("block");
    if (found == subtask.tunables.end()) return kDefaultElementwiseBlock;
    const int64_t block = found->second;
    if (block < 32 || block > 1024 || block % 32 != 0)
      return make_error("subtask {}: block {} is not a multiple of 32 in [32, 1024]", subtask.id,
                        block);
    return static_cast<int>(block);
  }

  std::string functor_name(const Subtask& subtask, std::string_view role) const {
    std::string name = subtask.id + "_" + std::string(role);
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return name;
  }

  // An elementwise body over `shape` through the library: loads are TensorOperands (their shapes
  // equal `shape`), stores OutOperands (contiguous).
  Status emit_library_elementwise(const Subtask& subtask, const std::string& role,
                                  const std::vector<int64_t>& shape, const Body& body,
                                  const std::vector<Store>& stores, CodeWriter& w) {
    const size_t n_in = body.loads.size(), n_out = stores.size();
    if (n_out == 0) return make_error("an elementwise body with nothing to store");
    std::string name = functor_name(subtask, role);
    functors_.open("struct {} {{", name);
    if (n_in == 0)  // the library's fill form: no input array
      functors_.open("__device__ void operator()(float (&y)[{}]) const {{", n_out);
    else
      functors_.open("__device__ void operator()(const float (&x)[{}], float (&y)[{}]) const {{",
                     n_in, n_out);
    std::vector<std::string> loads;
    for (size_t j = 0; j < n_in; ++j) loads.push_back(fmt::format("x[{}]", j));
    STITCH_ASSIGN_OR_RETURN(std::vector<std::string> steps,
                            emit_steps(functors_, body, loads, {}, "v"));
    for (size_t j = 0; j < n_out; ++j) {
      STITCH_ASSIGN_OR_RETURN(std::string value, operand_expr(stores[j].from, loads, steps, {}));
      functors_.line("y[{}] = {};", j, value);
    }
    functors_.close();
    functors_.close(";");
    functors_.blank();

    const int rank = static_cast<int>(shape.size());
    const int padded_rank = std::max(rank, 1);
    w.line("const int64_t shape[{}] = {{{}}};", padded_rank, rank ? int_list(shape) : "1");
    for (size_t j = 0; j < n_in; ++j) {
      const Access& load = body.loads[j];
      if (load.shape != shape)
        return make_error("elementwise load {} has shape [{}], the index space is [{}]", j,
                          int_list(load.shape), int_list(shape));
      STITCH_ASSIGN_OR_RETURN(std::string base, buffer_base(load.base));
      w.line("const TensorOperand in{}{{{}, {}, {}, {{{}}}}};", j, base,
             static_cast<int>(type_of(load.base).dtype), load.offset,
             rank ? int_list(load.strides) : "0");
    }
    for (size_t j = 0; j < n_out; ++j) {
      if (numel(type_of(stores[j].value).shape) != numel(shape))
        return make_error("store {} holds {} elements, the index space {}", j,
                          numel(type_of(stores[j].value).shape), numel(shape));
      STITCH_ASSIGN_OR_RETURN(std::string base, buffer_base(stores[j].value));
      w.line("const OutOperand out{}{{{}, {}, 0, {{{}}}}};", j, base,
             static_cast<int>(type_of(stores[j].value).dtype),
             rank ? int_list(contiguous(shape)) : "1");
    }
    std::string in_list, out_list;
    for (size_t j = 0; j < n_in; ++j) in_list += (j ? ", " : "") + fmt::format("in{}", j);
    for (size_t j = 0; j < n_out; ++j) out_list += (j ? ", " : "") + fmt::format("out{}", j);
    w.line("const OutOperand outs[{}] = {{{}}};", n_out, out_list);
    // Threads per block: the subtask's "block" tunable (refine tries others); the library's
    // default (256) is left implicit.
    STITCH_ASSIGN_OR_RETURN(int block, elementwise_block(subtask));
    const std::string block_arg = block == kDefaultElementwiseBlock ? "" : fmt::format(", {}", block);
    if (n_in == 0) {
      w.line("STITCH_CHECK_CUDA((launch_elementwise<0, {}>({}{{}}, nullptr, outs, {}, shape, stream{})));",
             n_out, name, padded_rank, block_arg);
    } else {
      w.line("const TensorOperand ins[{}] = {{{}}};", n_in, in_list);
      w.line("STITCH_CHECK_CUDA(launch_elementwise({}{{}}, ins, outs, {}, shape, stream{}));", name,
             padded_rank, block_arg);
    }
    return {};
  }

  Status emit_spec(const Subtask& subtask, const plan::ElementwiseSpec& spec, CodeWriter& w) {
    return emit_library_elementwise(subtask, "body", spec.shape, spec.body, spec.stores, w);
  }

  Status emit_spec(const Subtask& subtask, const plan::CopySpec& spec, CodeWriter& w) {
    Body body;
    body.loads.push_back(spec.source);
    Store store{spec.target, Operand{Operand::Kind::load, 0, 0}};
    if (spec.destination)
      return make_error("copies into part of a buffer (cat) are not emitted yet");
    return emit_library_elementwise(subtask, "copy", spec.source.shape, body, {store}, w);
  }

  Status emit_spec(const Subtask& subtask, const plan::MatmulSpec& spec, CodeWriter& w) {
    uses_matmul_ = true;
    // Row-major operand layouts from the Access strides: [batch, m, k] and [batch, k, n].
    auto layout = [](const Access& a, int64_t rows, int64_t cols, bool& transposed,
                     int64_t& ld) -> bool {
      int64_t row_stride = a.strides[1], col_stride = a.strides[2];
      if (col_stride == 1 || cols == 1) {
        transposed = false;
        ld = rows == 1 ? std::max<int64_t>(cols, 1) : row_stride;
        return ld >= cols;
      }
      if (row_stride == 1 || rows == 1) {
        transposed = true;
        ld = cols == 1 ? std::max<int64_t>(rows, 1) : col_stride;
        return ld >= rows;
      }
      return false;
    };
    if (spec.a.shape.size() != 3 || spec.b.shape.size() != 3)
      return make_error("matmul operands must be [batch, m, k] / [batch, k, n] accesses");
    bool trans_a = false, trans_b = false;
    int64_t lda = 0, ldb = 0;
    if (!layout(spec.a, spec.m, spec.k, trans_a, lda) || !layout(spec.b, spec.k, spec.n, trans_b, ldb))
      return make_error("a matmul operand is neither row- nor column-contiguous");
    if (spec.stores.empty()) return make_error("a matmul with nothing to store");
    const Store& gemm_out = spec.stores[0];
    static const std::map<std::string, std::string> epilogues = {
        {"none", "none"}, {"relu", "relu"},           {"gelu", "gelu"},
        {"bias", "bias"}, {"bias_relu", "bias_relu"}, {"bias_gelu", "bias_gelu"}};
    auto epilogue = epilogues.find(spec.library_epilogue);
    if (epilogue == epilogues.end())
      return make_error("unknown library epilogue '{}'", spec.library_epilogue);
    const bool bias_vector = spec.library_epilogue.rfind("bias", 0) == 0;
    const bool accumulate = spec.bias.has_value() && !bias_vector && spec.beta != 0.0;
    if (bias_vector && (!spec.bias || spec.bias->shape.size() != 1 || spec.bias->strides[0] != 1))
      return make_error("a bias epilogue needs a contiguous [n] bias");
    if (accumulate && !spec.bias->is_contiguous())
      return make_error("the matrix added to the product (beta * C) must be contiguous");

    const int index = matmul_count_++;
    std::string member = fmt::format("mm{}", index);
    auto tunable = [&](const char* key) {
      auto found = subtask.tunables.find(key);
      return found != subtask.tunables.end() && found->second != 0;
    };
    // Split-precision 3xTF32 (kernels/matmul_tf32x3.cuh) where the planner estimated it faster;
    // a parameter B is split once at init.
    const bool tf32x3 = tunable("split_tf32x3");
    const bool b_at_init = tf32x3 && tunable("split_b_at_init") &&
                           spec.b.base.kind == ir::ValueRef::Kind::param;
    uses_tf32x3_ = uses_tf32x3_ || tf32x3;
    state_members_.push_back(fmt::format("{} {};  // {}", tf32x3 ? "Tf32x3Matmul" : "LtMatmul",
                                         member, subtask.id));
    // Init: describe, pick candidates, time them on scratch.
    CodeWriter& iw = matmul_init_;
    iw.open("{{  // {}: [{}] x [{}x{}] @ [{}x{}]", subtask.id, spec.batch, spec.m, spec.k, spec.k,
            spec.n);
    iw.line("MatmulShape shape;");
    iw.line("shape.batch = {}; shape.m = {}; shape.n = {}; shape.k = {};", spec.batch, spec.m,
            spec.n, spec.k);
    iw.line("shape.lda = {}; shape.ldb = {}; shape.ldc = {};", lda, ldb, spec.n);
    iw.line("shape.stride_a = {}; shape.stride_b = {}; shape.stride_c = {};", spec.a.strides[0],
            spec.b.strides[0], spec.m * spec.n);
    iw.line("shape.trans_a = {}; shape.trans_b = {};", trans_a, trans_b);
    iw.line("STITCH_CHECK(s->{}.init(s->lt, shape, MatmulEpilogue::{}, {}, s->lt_workspace, "
            "s->lt_workspace_bytes, error));",
            member, epilogue->second, accumulate);
    int64_t a_elems = spec.a.strides[0] * (spec.batch - 1) + (trans_a ? spec.k * lda : spec.m * lda);
    int64_t b_elems = spec.b.strides[0] * (spec.batch - 1) + (trans_b ? spec.n * ldb : spec.k * ldb);
    iw.line("STITCH_CHECK(tune_on_scratch(s->{}, {}, {}, {}, {}, stream, error, {}));", member,
            std::max<int64_t>(a_elems, 1), std::max<int64_t>(b_elems, 1),
            spec.batch * spec.m * spec.n, bias_vector ? spec.n : 0, options_.tune_iterations);
    STITCH_ASSIGN_OR_RETURN(std::string a, typed_base(spec.a.base));
    STITCH_ASSIGN_OR_RETURN(std::string b, typed_base(spec.b.base));
    if (b_at_init) {  // after tuning, which splits scratch into the same buffer
      iw.line("STITCH_CHECK(s->{}.prepare_b({} + {}, stream, error));", member, b, spec.b.offset);
      b = "nullptr";
    }
    iw.close();

    STITCH_ASSIGN_OR_RETURN(std::string d, typed_base(gemm_out.value, true));
    if (numel(type_of(gemm_out.value).shape) != spec.batch * spec.m * spec.n)
      return make_error("the GEMM output buffer does not hold [batch, m, n]");
    std::string bias = "nullptr", c_in = "nullptr";
    if (spec.bias) {
      STITCH_ASSIGN_OR_RETURN(std::string base, typed_base(spec.bias->base));
      (bias_vector ? bias : c_in) = fmt::format("{} + {}", base, spec.bias->offset);
    }
    const std::string b_arg = b == "nullptr" ? b : fmt::format("{} + {}", b, spec.b.offset);
    w.line("STITCH_CHECK(s->{}.run({} + {}, {}, {}, {}, {}, {}, {}, stream, error));", member, a,
           spec.a.offset, b_arg, c_in, d, bias, float_literal(spec.alpha),
           float_literal(accumulate ? spec.beta : 0.0));
    if (spec.epilogue) {
      std::vector<Store> rest(spec.stores.begin() + 1, spec.stores.end());
      if (rest.empty()) return make_error("a GEMM epilogue that stores nothing");
      STITCH_TRY(emit_library_elementwise(subtask, "epilogue", {spec.batch, spec.m, spec.n},
                                          reshaped_epilogue(*spec.epilogue, spec), rest, w));
    }
    return {};
  }

  // Epilogue loads are [batch, m, n] by contract; a 2-D GEMM's loads may be stated as [m, n].
  Body reshaped_epilogue(const Body& body, const plan::MatmulSpec& spec) const {
    Body copy = body;
    for (Access& load : copy.loads)
      if (load.shape.size() == 2 && load.shape[0] == spec.m && load.shape[1] == spec.n) {
        load.shape.insert(load.shape.begin(), 1);
        load.strides.insert(load.strides.begin(), 0);
      }
    return copy;
  }

  // Members of a device functor: one typed pointer per load of `body` (and `extra` accesses).
  Result<std::vector<std::pair<std::string, std::string>>> pointer_members(
      const std::vector<Access>& accesses, const std::string& prefix) const {
    std::vector<std::pair<std::string, std::string>> members;  // (declaration, initializer)
    for (size_t j = 0; j < accesses.size(); ++j) {
      STITCH_ASSIGN_OR_RETURN(std::string init, typed_base(accesses[j].base));
      std::string type = c_type(type_of(accesses[j].base).dtype);
      members.push_back({fmt::format("const {}* {}{};", type, prefix, j), init});
    }
    return members;
  }

  Status emit_spec(const Subtask& subtask, const plan::ReductionSpec& spec, CodeWriter& w) {
    static const std::map<plan::ReduceOp, std::string> ops = {
        {plan::ReduceOp::sum, "sum"},       {plan::ReduceOp::max, "max"},
        {plan::ReduceOp::min, "min"},       {plan::ReduceOp::prod, "prod"},
        {plan::ReduceOp::argmax, "argmax"}, {plan::ReduceOp::argmin, "argmin"},
        {plan::ReduceOp::mean_var, "mean_var"}};
    const std::vector<int64_t> space3 = {spec.outer, spec.reduce, spec.inner};
    const std::vector<int64_t> space2 = {spec.outer, spec.inner};
    // Prologue functor.
    std::string pro = functor_name(subtask, "prologue");
    std::vector<Access> pro_loads = spec.prologue ? spec.prologue->loads : std::vector{spec.input};
    STITCH_ASSIGN_OR_RETURN(auto pro_members, pointer_members(pro_loads, "l"));
    functors_.open("struct {} {{", pro);
    for (const auto& [decl, init] : pro_members) functors_.line("{}", decl);
    functors_.open("__device__ float operator()(int64_t o, int64_t r, int64_t i) const {{");
    functors_.line("const int64_t e = (o * {} + r) * {} + i;", spec.reduce, spec.inner);
    functors_.line("(void)e;");
    std::vector<std::string> loads;
    for (size_t j = 0; j < pro_loads.size(); ++j) {
      std::string name = fmt::format("x{}", j);
      functors_.line("const float {} = static_cast<float>(l{}[{}]);", name, j,
                     index_expr(pro_loads[j], space3, {"o", "r", "i"}, "e"));
      loads.push_back(name);
    }
    if (spec.prologue) {
      STITCH_ASSIGN_OR_RETURN(std::vector<std::string> steps,
                              emit_steps(functors_, *spec.prologue, loads, {}, "v"));
      functors_.line("return {};", steps.empty() ? loads[0] : steps.back());
    } else {
      functors_.line("return x0;");
    }
    functors_.close();
    functors_.close(";");
    functors_.blank();

    // Epilogue functor: the node's outputs as register values, then steps, then stores.
    std::string epi = functor_name(subtask, "epilogue");
    const ir::Node& node = plan_.graph.nodes.at(spec.node);
    const size_t n_results = node.outputs.size();
    std::vector<Access> extra_loads;
    if (spec.epilogue)
      for (size_t j = n_results; j < spec.epilogue->loads.size(); ++j)
        extra_loads.push_back(spec.epilogue->loads[j]);
    STITCH_ASSIGN_OR_RETURN(auto extra_members, pointer_members(extra_loads, "l"));
    std::vector<std::pair<std::string, std::string>> store_members;
    for (size_t j = 0; j < spec.stores.size(); ++j) {
      STITCH_ASSIGN_OR_RETURN(std::string init, typed_base(spec.stores[j].value, true));
      store_members.push_back(
          {fmt::format("{}* out{};", c_type(type_of(spec.stores[j].value).dtype), j), init});
    }
    std::string result_type = spec.op == plan::ReduceOp::argmax || spec.op == plan::ReduceOp::argmin
                                  ? "ValueIndex"
                              : spec.op == plan::ReduceOp::mean_var ? "MeanVar"
                                                                     : "float";
    functors_.open("struct {} {{", epi);
    for (const auto& [decl, init] : extra_members) functors_.line("{}", decl);
    for (const auto& [decl, init] : store_members) functors_.line("{}", decl);
    functors_.open("__device__ void operator()(int64_t o, int64_t i, {} result) const {{",
                   result_type);
    functors_.line("const int64_t e = o * {} + i;", spec.inner);
    // The register values: output k of the reduction node.
    std::vector<std::string> results;
    switch (spec.op) {
      case plan::ReduceOp::argmax:
      case plan::ReduceOp::argmin:
        if (n_results == 2) results = {"result.value", "static_cast<float>(result.index)"};
        else results = {"static_cast<float>(result.index)"};
        break;
      case plan::ReduceOp::mean_var:
        functors_.line("const float var = result.m2 / static_cast<float>(result.count - {});",
                       float_literal(spec.correction));
        results = {"var", "result.mean"};
        break;
      default: results = {"result"};
    }
    while (results.size() < n_results) results.push_back(results.back());
    std::vector<std::string> epi_loads = results;
    epi_loads.resize(n_results);
    for (size_t j = 0; j < extra_loads.size(); ++j) {
      std::string name = fmt::format("x{}", j);
      functors_.line("const float {} = static_cast<float>(l{}[{}]);", name, j,
                     index_expr(extra_loads[j], space2, {"o", "i"}, "e"));
      epi_loads.push_back(name);
    }
    std::vector<std::string> steps;
    std::vector<std::string> index_values = {fmt::format("{}.0f", spec.reduce)};
    if (spec.epilogue) {
      STITCH_ASSIGN_OR_RETURN(steps,
                              emit_steps(functors_, *spec.epilogue, epi_loads, index_values, "v"));
    }
    for (size_t j = 0; j < spec.stores.size(); ++j) {
      const Store& store = spec.stores[j];
      std::string value;
      // Indices are stored exactly, not through float.
      bool index_store = (spec.op == plan::ReduceOp::argmax || spec.op == plan::ReduceOp::argmin) &&
                         store.from.kind == Operand::Kind::load &&
                         store.from.index == static_cast<int>(n_results) - 1 &&
                         type_of(store.value).dtype == ir::DType::int64;
      if (index_store) {
        functors_.line("out{}[e] = result.index;", j);
        continue;
      }
      STITCH_ASSIGN_OR_RETURN(value, operand_expr(store.from, epi_loads, steps, index_values));
      STITCH_ASSIGN_OR_RETURN(std::string statement,
                              store_statement(store, fmt::format("out{}", j), "e", value));
      functors_.line("{}", statement);
    }
    functors_.close();
    functors_.close(";");
    functors_.blank();

    // Launch.
    std::string pro_init, epi_init;
    for (const auto& [decl, init] : pro_members) pro_init += (pro_init.empty() ? "" : ", ") + init;
    for (const auto& [decl, init] : extra_members) epi_init += (epi_init.empty() ? "" : ", ") + init;
    for (const auto& [decl, init] : store_members) epi_init += (epi_init.empty() ? "" : ", ") + init;
    reduce_scratch_.push_back(fmt::format("reduce_workspace_bytes({}, {}, {})", spec.outer,
                                          spec.reduce, spec.inner));
    w.line("const {} pro{{{}}};", pro, pro_init);
    w.line("const {} epi{{{}}};", epi, epi_init);
    w.line("STITCH_CHECK_CUDA((launch_reduce<ReduceOp::{}>({}, {}, {}, pro, epi, s->reduce_scratch, "
           "stream)));",
           ops.at(spec.op), spec.outer, spec.reduce, spec.inner);
    return {};
  }

  Status emit_spec(const Subtask& subtask, const plan::RowSpec& spec, CodeWriter& w) {
    const std::vector<int64_t> space = {spec.rows, spec.cols};
    std::string load = functor_name(subtask, "load");
    std::vector<Access> loads = spec.prologue ? spec.prologue->loads : std::vector{spec.input};
    STITCH_ASSIGN_OR_RETURN(auto load_members, pointer_members(loads, "l"));
    functors_.open("struct {} {{", load);
    for (const auto& [decl, init] : load_members) functors_.line("{}", decl);
    functors_.open("__device__ float operator()(int64_t row, int64_t col) const {{");
    functors_.line("const int64_t e = row * {} + col;", spec.cols);
    functors_.line("(void)e;");
    std::vector<std::string> names;
    for (size_t j = 0; j < loads.size(); ++j) {
      functors_.line("const float x{} = static_cast<float>(l{}[{}]);", j, j,
                     index_expr(loads[j], space, {"row", "col"}, "e"));
      names.push_back(fmt::format("x{}", j));
    }
    if (spec.prologue) {
      STITCH_ASSIGN_OR_RETURN(std::vector<std::string> steps,
                              emit_steps(functors_, *spec.prologue, names, {}, "v"));
      functors_.line("return {};", steps.empty() ? names[0] : steps.back());
    } else {
      functors_.line("return x0;");
    }
    functors_.close();
    functors_.close(";");
    functors_.blank();

    std::string store = functor_name(subtask, "store");
    std::vector<Access> extra;
    if (spec.epilogue)
      extra.assign(spec.epilogue->loads.begin() + std::min<size_t>(1, spec.epilogue->loads.size()),
                   spec.epilogue->loads.end());
    STITCH_ASSIGN_OR_RETURN(auto extra_members, pointer_members(extra, "l"));
    std::vector<std::pair<std::string, std::string>> store_members;
    for (size_t j = 0; j < spec.stores.size(); ++j) {
      STITCH_ASSIGN_OR_RETURN(std::string init, typed_base(spec.stores[j].value, true));
      store_members.push_back(
          {fmt::format("{}* out{};", c_type(type_of(spec.stores[j].value).dtype), j), init});
    }
    functors_.open("struct {} {{", store);
    for (const auto& [decl, init] : extra_members) functors_.line("{}", decl);
    for (const auto& [decl, init] : store_members) functors_.line("{}", decl);
    functors_.open("__device__ void operator()(int64_t row, int64_t col, float y) const {{");
    functors_.line("const int64_t e = row * {} + col;", spec.cols);
    std::vector<std::string> epi_loads = {"y"};
    for (size_t j = 0; j < extra.size(); ++j) {
      functors_.line("const float x{} = static_cast<float>(l{}[{}]);", j, j,
                     index_expr(extra[j], space, {"row", "col"}, "e"));
      epi_loads.push_back(fmt::format("x{}", j));
    }
    std::vector<std::string> steps;
    if (spec.epilogue) {
      STITCH_ASSIGN_OR_RETURN(steps, emit_steps(functors_, *spec.epilogue, epi_loads, {}, "v"));
    }
    for (size_t j = 0; j < spec.stores.size(); ++j) {
      STITCH_ASSIGN_OR_RETURN(std::string value,
                              operand_expr(spec.stores[j].from, epi_loads, steps, {}));
      STITCH_ASSIGN_OR_RETURN(std::string statement, store_statement(spec.stores[j],
                                                                     fmt::format("out{}", j), "e",
                                                                     value));
      functors_.line("{}", statement);
    }
    functors_.close();
    functors_.close(";");
    functors_.blank();

    std::string load_init, store_init;
    for (const auto& [decl, init] : load_members) load_init += (load_init.empty() ? "" : ", ") + init;
    for (const auto& [decl, init] : extra_members) store_init += (store_init.empty() ? "" : ", ") + init;
    for (const auto& [decl, init] : store_members) store_init += (store_init.empty() ? "" : ", ") + init;
    w.line("const {} load{{{}}};", load, load_init);
    w.line("const {} store{{{}}};", store, store_init);
    std::string weight = "nullptr", bias = "nullptr";
    if (spec.weight) {
      STITCH_ASSIGN_OR_RETURN(std::string base, typed_base(spec.weight->base));
      weight = fmt::format("{} + {}", base, spec.weight->offset);
    }
    if (spec.bias) {
      STITCH_ASSIGN_OR_RETURN(std::string base, typed_base(spec.bias->base));
      bias = fmt::format("{} + {}", base, spec.bias->offset);
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
        w.line("STITCH_CHECK_CUDA(launch_rms_norm({}, {}, {}, {}, load, store, stream));",
               spec.rows, spec.cols, float_literal(spec.eps), weight);
        break;
    }
    return {};
  }

  // ---- assembly -----------------------------------------------------------------------------

  std::string assemble() const {
    CodeWriter out;
    const ir::Graph& graph = plan_.graph;
    out.line("// Generated by StitchCUDA's built-in Coder from task '{}' (plan v{}). Regenerate with",
             plan_.task, plan_.version);
    out.line("// `stitchcuda generate`; edits here are lost. fp32 track: FP32 arithmetic throughout.");
    out.line("#include <cstdint>");
    out.line("#include <string>");
    out.blank();
    out.line("#include \"stitch/program.h\"");
    out.line("#include \"kernels/runtime.cuh\"");
    out.line("#include \"kernels/program_support.cuh\"");
    out.line("#include \"kernels/scalar_ops.cuh\"");
    out.line("#include \"kernels/elementwise.cuh\"");
    out.line("#include \"kernels/reduction.cuh\"");
    out.line("#include \"kernels/row.cuh\"");
    if (uses_matmul_) out.line("#include \"kernels/matmul.cuh\"");
    if (uses_tf32x3_) out.line("#include \"kernels/matmul_tf32x3.cuh\"");
    out.blank();
    out.line("namespace {{");  // not indented (the project's style)
    out.blank();
    out.line("using namespace stitch::kernels;");
    out.blank();
    for (const auto& line : split_lines(functors_.text())) out.line("{}", line);

    // Expected shapes of params, inputs and outputs.
    auto emit_spec_table = [&](const char* name, const std::vector<const ir::TensorType*>& types) {
      out.line("constexpr int k{}Count = {};", name, types.size());
      if (types.empty()) return;
      out.open("constexpr TensorSpec k{}[{}] = {{", name, types.size());
      for (const auto* type : types)
        out.line("{{{}, {}, {{{}}}}},", static_cast<int>(type->dtype), type->rank(),
                 type->rank() ? int_list(type->shape) : "0");
      out.close(";");
    };
    std::vector<const ir::TensorType*> params, inputs, outputs;
    for (const auto& p : graph.params) params.push_back(&p.type);
    for (const auto& in : graph.inputs) inputs.push_back(&in.type);
    for (const auto& ref : graph.outputs) outputs.push_back(&graph.type_of(ref));
    emit_spec_table("Params", params);
    emit_spec_table("Inputs", inputs);
    emit_spec_table("Outputs", outputs);
    out.blank();
    out.open("struct State {{");
    out.line("std::string error;");
    out.line("char* persistent = nullptr;  // params (copied at init) + at-init results");
    out.line("Arena arena;");
    out.line("char* arena_base = nullptr;");
    out.line("void* reduce_scratch = nullptr;  // inside the arena");
    if (uses_matmul_) {
      out.line("cublasLtHandle_t lt = nullptr;");
      out.line("void* lt_workspace = nullptr;  // inside the arena");
      out.line("size_t lt_workspace_bytes = 0;");
    }
    out.line("GraphCache graphs;");
    for (const auto& member : state_members_) out.line("{}", member);
    out.open("~State() {{");
    out.line("cudaDeviceSynchronize();");
    if (uses_matmul_) out.line("if (lt) cublasLtDestroy(lt);");
    out.line("if (persistent) cudaFree(persistent);");
    out.close();
    out.close(";");
    out.blank();

    out.line("// Every forward subtask, in plan order, on `stream` (captured into a CUDA graph).");
    out.open("int run_subtasks(State* s, const stitch_tensor* inputs, stitch_tensor* outputs, "
             "cudaStream_t stream) {{");
    out.line("std::string& error = s->error;");
    out.line("(void)inputs;");
    out.line("(void)outputs;");
    for (const auto& line : split_lines(forward_body_.text())) out.line("{}", line);
    out.line("return STITCH_OK;");
    out.close();
    out.blank();

    out.line("// Subtasks that read only params: run once, in stitch_init.");
    out.open("int run_init_subtasks(State* s, cudaStream_t stream) {{");
    out.line("std::string& error = s->error;");
    out.line("const stitch_tensor* inputs = nullptr;");
    out.line("stitch_tensor* outputs = nullptr;");
    out.line("(void)inputs;");
    out.line("(void)outputs;");
    for (const auto& line : split_lines(init_body_.text())) out.line("{}", line);
    out.line("return STITCH_OK;");
    out.close();
    out.blank();

    out.open("int init_state(State* s, const stitch_tensor* params, int n_params) {{");
    out.line("std::string& error = s->error;");
    out.open("if (n_params != kParamsCount) {{");
    out.line("error = \"expected \" + std::to_string(kParamsCount) + \" params, got \" + "
             "std::to_string(n_params);");
    out.line("return STITCH_ERROR_INVALID_ARGUMENT;");
    out.close();
    if (!params.empty()) {
      out.line("for (int p = 0; p < kParamsCount; ++p)");
      out.line("  STITCH_CHECK(check_tensor(params[p], kParams[p], \"param\", p, error));");
    }
    // Init work runs on the default stream and is synchronized before returning: nothing it
    // starts outlives stitch_init, and the program creates no stream of its own.
    out.line("cudaStream_t stream = nullptr;");
    out.line("STITCH_CHECK_CUDA(cudaMalloc(&s->persistent, {}));", std::max<int64_t>(persistent_total_, 256));
    for (size_t p = 0; p < graph.params.size(); ++p)
      out.line("STITCH_CHECK_CUDA(cudaMemcpyAsync(s->persistent + {}, params[{}].data, {}, "
               "cudaMemcpyDeviceToDevice, stream));",
               param_offsets_[p], p, graph.params[p].type.bytes());
    // Arena: the plan's intermediates, then the reduction scratch (largest need).
    int64_t arena_plan = std::max<int64_t>(plan_.host.workspace_bytes, 0);
    out.line("size_t reduce_scratch_bytes = 0;");
    for (const auto& expr : reduce_scratch_)
      out.line("reduce_scratch_bytes = std::max(reduce_scratch_bytes, {});", expr);
    out.line("STITCH_CHECK(s->arena.reserve({} + Arena::align(reduce_scratch_bytes), error));",
             align256(arena_plan));
    out.line("s->arena_base = static_cast<char*>(s->arena.at(0));");
    out.line("s->reduce_scratch = reduce_scratch_bytes ? s->arena.at({}) : nullptr;",
             align256(arena_plan));
    if (uses_matmul_) {
      int64_t lt_bytes = plan_.host.library_workspace_bytes;
      out.line("s->lt_workspace_bytes = {};", lt_bytes);
      out.line("s->lt_workspace = s->lt_workspace_bytes ? s->arena.at({}) : nullptr;",
               std::max<int64_t>(arena_plan - lt_bytes, 0));
      out.line("STITCH_CHECK_CUBLAS(cublasLtCreate(&s->lt));");
      for (const auto& line : split_lines(matmul_init_.text())) out.line("{}", line);
    }
    out.line("STITCH_CHECK(run_init_subtasks(s, stream));");
    out.line("STITCH_CHECK_CUDA(cudaStreamSynchronize(stream));");
    out.line("s->graphs.set_enabled({});", options_.cuda_graph && plan_.host.cuda_graph);
    out.line("return STITCH_OK;");
    out.close();
    out.blank();
    out.line("std::string g_init_error;  // stitch_last_error(nullptr) after a failed init");
    out.blank();
    out.line("}}  // namespace");
    out.blank();

    out.line("extern \"C\" int stitch_abi_version(void) {{ return STITCH_ABI_VERSION; }}");
    out.blank();
    out.open("extern \"C\" int stitch_init(const stitch_tensor* params, int n_params, void** state) {{");
    out.line("State* s = new State();");
    out.line("int status = init_state(s, params, n_params);");
    out.open("if (status != STITCH_OK) {{");
    out.line("g_init_error = s->error;");
    out.line("delete s;");
    out.line("return status;");
    out.close();
    out.line("*state = s;");
    out.line("return STITCH_OK;");
    out.close();
    out.blank();
    out.open("extern \"C\" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs, "
             "stitch_tensor* outputs, int n_outputs, void* stream_ptr) {{");
    out.line("State* s = static_cast<State*>(state);");
    out.line("std::string& error = s->error;");
    out.open("if (n_inputs != kInputsCount || n_outputs != kOutputsCount) {{");
    out.line("error = \"expected \" + std::to_string(kInputsCount) + \" inputs and \" + "
             "std::to_string(kOutputsCount) + \" outputs\";");
    out.line("return STITCH_ERROR_INVALID_ARGUMENT;");
    out.close();
    if (!inputs.empty()) {
      out.line("for (int i = 0; i < kInputsCount; ++i)");
      out.line("  STITCH_CHECK(check_tensor(inputs[i], kInputs[i], \"input\", i, error));");
    }
    out.line("for (int i = 0; i < kOutputsCount; ++i)");
    out.line("  STITCH_CHECK(check_tensor(outputs[i], kOutputs[i], \"output\", i, error));");
    out.line("cudaStream_t stream = static_cast<cudaStream_t>(stream_ptr);");
    out.line("const void* key[{}];", std::max<size_t>(inputs.size() + outputs.size(), 1));
    out.line("for (int i = 0; i < kInputsCount; ++i) key[i] = inputs[i].data;");
    out.line("for (int i = 0; i < kOutputsCount; ++i) key[kInputsCount + i] = outputs[i].data;");
    out.line("return s->graphs.run(key, kInputsCount + kOutputsCount, stream,");
    out.line("                     [&](cudaStream_t st) {{ return run_subtasks(s, inputs, outputs, st); }}, error);");
    out.close();
    out.blank();
    out.line("extern \"C\" void stitch_destroy(void* state) {{ delete static_cast<State*>(state); }}");
    out.blank();
    out.open("extern \"C\" const char* stitch_last_error(void* state) {{");
    out.line("return state ? static_cast<State*>(state)->error.c_str() : g_init_error.c_str();");
    out.close();
    return out.text();
  }

  static std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
      size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      lines.push_back(text.substr(start, end - start));
      start = end + 1;
    }
    return lines;
  }

  const Plan& plan_;
  const EmitOptions& options_;
  std::map<std::string, const plan::BufferSlot*> slots_;
  std::vector<int64_t> param_offsets_;
  int64_t persistent_total_ = 0;
  bool uses_tf32x3_ = false;
  CodeWriter functors_, forward_body_, init_body_, matmul_init_;
  std::vector<std::string> state_members_;
  std::vector<std::string> reduce_scratch_;
  bool uses_matmul_ = false;
  int matmul_count_ = 0;
};

}  // namespace

Result<EmittedProgram> emit_program(const plan::Plan& plan, const EmitOptions& options) {
  ProgramEmitter emitter(plan, options);
  return emitter.emit();
}

}  // namespace stitch::codegen
