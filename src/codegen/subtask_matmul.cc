// GEMM subtasks: an LtMatmul (kernels/matmul.cuh), a split-precision Tf32x3Matmul
// (kernels/matmul_tf32x3.cuh) or the one-kernel split-precision GemmTf32x3
// (kernels/gemm_tf32x3.cuh) member of Program::Gemms, described and tuned in Program::init_gemms,
// run in run_subtasks; what the library epilogue cannot fold runs as one elementwise pass after.
#include "codegen/emit_context.h"
#include "codegen/emit_elementwise.h"
#include "plan/kernel_choice.h"

namespace stitch::codegen {
namespace {

using plan::Access;
using plan::Body;
using plan::MatmulSpec;
using plan::Store;
using plan::Subtask;
using plan::subtask_tensor_math;
using plan::TensorMath;

// A row-major operand's layout from its [batch, rows, cols] Access strides: row- or
// column-contiguous (transposed), with its leading dimension; false for neither.
bool operand_layout(const Access& a, int64_t rows, int64_t cols, bool& transposed, int64_t& ld) {
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
}

// What the spec asks of the library, checked.
struct GemmShape {
  bool trans_a = false, trans_b = false;
  int64_t lda = 0, ldb = 0;
  bool bias_vector = false;  // the library epilogue adds bias[n] to every row
  bool accumulate = false;   // beta * C (a full [m, n] matrix) is added
};

Result<GemmShape> check_gemm(const MatmulSpec& spec) {
  if (spec.a.shape.size() != 3 || spec.b.shape.size() != 3)
    return make_error("matmul operands must be [batch, m, k] / [batch, k, n] accesses");
  GemmShape g;
  if (!operand_layout(spec.a, spec.m, spec.k, g.trans_a, g.lda) ||
      !operand_layout(spec.b, spec.k, spec.n, g.trans_b, g.ldb))
    return make_error("a matmul operand is neither row- nor column-contiguous");
  if (spec.stores.empty()) return make_error("a matmul with nothing to store");
  if (!plan::is_store_epilogue(spec.library_epilogue))
    return make_error("unknown library epilogue '{}'", spec.library_epilogue);
  g.bias_vector = spec.library_epilogue.rfind("bias", 0) == 0;
  g.accumulate = spec.bias.has_value() && !g.bias_vector && spec.beta != 0.0;
  if (g.bias_vector && (!spec.bias || spec.bias->shape.size() != 1 || spec.bias->strides[0] != 1))
    return make_error("a bias epilogue needs a contiguous [n] bias");
  if (g.accumulate && !spec.bias->is_contiguous())
    return make_error("the matrix added to the product (beta * C) must be contiguous");
  return g;
}

bool tunable_set(const Subtask& subtask, const char* key) {
  auto found = subtask.tunables.find(key);
  return found != subtask.tunables.end() && found->second != 0;
}

// Init: describe, pick candidates, time them on scratch (unless `tune` is false: GemmTf32x3 has
// nothing to time), and split a param B once, after tuning, which splits scratch into the same
// buffer; `timed`: then a strict-FP32 LtMatmul (member <member>_strict), tuned and timed against
// it (<member>_strict_faster). Returns B's pointer for the run, "nullptr" when B was prepared at
// init.
Result<std::string> emit_gemm_init(EmitContext& ctx, const Subtask& subtask, const MatmulSpec& spec,
                                   const GemmShape& g, const std::string& member, bool b_at_init,
                                   bool tune, bool timed) {
  CodeWriter& iw = ctx.pieces().gemm_init;
  iw.open("{{  // {}: [{}] x [{}x{}] @ [{}x{}]", subtask.id, spec.batch, spec.m, spec.k, spec.k,
          spec.n);
  iw.line("MatmulShape shape;");
  iw.line("shape.batch = {}; shape.m = {}; shape.n = {}; shape.k = {};", spec.batch, spec.m,
          spec.n, spec.k);
  iw.line("shape.lda = {}; shape.ldb = {}; shape.ldc = {};", g.lda, g.ldb, spec.n);
  iw.line("shape.stride_a = {}; shape.stride_b = {}; shape.stride_c = {};", spec.a.strides[0],
          spec.b.strides[0], spec.m * spec.n);
  iw.line("shape.trans_a = {}; shape.trans_b = {};", g.trans_a, g.trans_b);
  // The tf32 / bf16 tracks' tensor-core math (an LtMatmul: never split); strict FP32 otherwise.
  const TensorMath math = subtask_tensor_math(subtask);
  if (math == TensorMath::fp32)
    iw.line("STITCH_CHECK(s->{}.init(s->lt, shape, MatmulEpilogue::{}, {}, s->lt_workspace, "
            "s->lt_workspace_bytes, error));",
            member, spec.library_epilogue, g.accumulate);
  else
    iw.line("STITCH_CHECK(s->{}.init_with_compute(s->lt, shape, MatmulEpilogue::{}, {}, "
            "s->lt_workspace, s->lt_workspace_bytes, error, 16, LtMatmul::Compute::{}));",
            member, spec.library_epilogue, g.accumulate,
            math == TensorMath::tf32 ? "fast_tf32" : "fast_bf16");
  const int64_t a_elems =
      spec.a.strides[0] * (spec.batch - 1) + (g.trans_a ? spec.k * g.lda : spec.m * g.lda);
  const int64_t b_elems =
      spec.b.strides[0] * (spec.batch - 1) + (g.trans_b ? spec.n * g.ldb : spec.k * g.ldb);
  if (tune)
    iw.line("STITCH_CHECK(tune_on_scratch(s->{}, {}, {}, {}, {}, stream, error, {}));", member,
            std::max<int64_t>(a_elems, 1), std::max<int64_t>(b_elems, 1),
            spec.batch * spec.m * spec.n, g.bias_vector ? spec.n : 0, ctx.options().tune_iterations);
  STITCH_ASSIGN_OR_RETURN(std::string b, ctx.typed_base(spec.b.base));
  if (b_at_init) {
    iw.line("STITCH_CHECK(s->{}.prepare_b({} + {}, stream, error));", member, b, spec.b.offset);
    b = "nullptr";
  }
  if (timed) {  // strict FP32 timed against the split GEMM (kernel_choice.h, strict_alternative)
    iw.line("STITCH_CHECK(s->{0}_strict.init(s->lt, shape, MatmulEpilogue::{1}, {2}, "
            "s->lt_workspace, s->lt_workspace_bytes, error));",
            member, spec.library_epilogue, g.accumulate);
    iw.line("STITCH_CHECK(tune_on_scratch(s->{}_strict, {}, {}, {}, {}, stream, error, {}));",
            member, std::max<int64_t>(a_elems, 1), std::max<int64_t>(b_elems, 1),
            spec.batch * spec.m * spec.n, g.bias_vector ? spec.n : 0,
            ctx.options().tune_iterations);
    iw.line("STITCH_CHECK(time_gemm_against_strict(s->{0}, {1}, s->{0}_strict, {2}, {3}, {4}, {5}, "
            "{6}, stream, error, s->{0}_strict_faster));",
            member, b_at_init, std::max<int64_t>(a_elems, 1), std::max<int64_t>(b_elems, 1),
            spec.batch * spec.m * spec.n, g.bias_vector ? spec.n : 0, g.accumulate);
  }
  iw.close();
  return b;
}

// Epilogue loads are [batch, m, n] by contract; a 2-D GEMM's loads may be stated as [m, n].
Body reshaped_epilogue(const Body& body, const MatmulSpec& spec) {
  Body copy = body;
  for (Access& load : copy.loads)
    if (load.shape.size() == 2 && load.shape[0] == spec.m && load.shape[1] == spec.n) {
      load.shape.insert(load.shape.begin(), 1);
      load.strides.insert(load.strides.begin(), 0);
    }
  return copy;
}

}  // namespace

Status emit_spec(EmitContext& ctx, const Subtask& subtask, const MatmulSpec& spec,
                           CodeWriter& w) {
  ProgramPieces& pieces = ctx.pieces();
  pieces.uses_matmul = true;
  STITCH_ASSIGN_OR_RETURN(GemmShape g, check_gemm(spec));
  const std::string member = fmt::format("gemms.mm{}", pieces.matmul_count++);
  // Split-precision 3xTF32 where the planner estimated it faster: in one kernel (tf32x3_kernel,
  // A not transposed) or on split copies, where a parameter B is split once at init.
  const bool tf32x3 = tunable_set(subtask, "split_tf32x3");
  const bool in_kernel = tf32x3 && tunable_set(subtask, "tf32x3_kernel") && !g.trans_a;
  const bool b_at_init = tf32x3 && tunable_set(subtask, "split_b_at_init") &&
                         spec.b.base.kind == ir::ValueRef::Kind::param;
  pieces.uses_tf32x3 = pieces.uses_tf32x3 || (tf32x3 && !in_kernel);
  pieces.uses_gemm_tf32x3 = pieces.uses_gemm_tf32x3 || in_kernel;
  const bool timed = tf32x3 && tunable_set(subtask, "strict_alternative");
  const char* type = in_kernel ? "GemmTf32x3" : tf32x3 ? "Tf32x3Matmul" : "LtMatmul";
  const std::string name = member.substr(member.find('.') + 1);
  pieces.gemm_members.push_back(fmt::format("{} {};  // {}", type, name, subtask.id));
  if (timed) {
    pieces.gemm_members.push_back(
        fmt::format("LtMatmul {}_strict;  // strict FP32, timed against it at init", name));
    pieces.gemm_members.push_back(fmt::format("bool {}_strict_faster = false;", name));
  }
  STITCH_ASSIGN_OR_RETURN(std::string a, ctx.access_pointer(spec.a));
  STITCH_ASSIGN_OR_RETURN(std::string raw_b, ctx.typed_base(spec.b.base));
  STITCH_ASSIGN_OR_RETURN(
      std::string b, emit_gemm_init(ctx, subtask, spec, g, member, b_at_init, !in_kernel, timed));

  const Store& gemm_out = spec.stores[0];
  STITCH_ASSIGN_OR_RETURN(std::string d, ctx.typed_base(gemm_out.value, true));
  if (numel(ctx.type_of(gemm_out.value).shape) != spec.batch * spec.m * spec.n)
    return make_error("the GEMM output buffer does not hold [batch, m, n]");
  std::string bias = "nullptr", c_in = "nullptr";
  if (spec.bias) {
    STITCH_ASSIGN_OR_RETURN((g.bias_vector ? bias : c_in), ctx.access_pointer(*spec.bias));
  }
  const std::string b_arg = b == "nullptr" ? b : fmt::format("{} + {}", b, spec.b.offset);
  const std::string alpha = float_literal(spec.alpha);
  const std::string beta = float_literal(g.accumulate ? spec.beta : 0.0);
  const std::string run = fmt::format("STITCH_CHECK(s->{}.run({}, {}, {}, {}, {}, {}, {}, stream, "
                                      "error));",
                                      member, a, b_arg, c_in, d, bias, alpha, beta);
  if (timed) {
    w.open("if (s->{}_strict_faster) {{", member);
    w.line("STITCH_CHECK(s->{}_strict.run({}, {} + {}, {}, {}, {}, {}, {}, stream, error));",
           member, a, raw_b, spec.b.offset, c_in, d, bias, alpha, beta);
    w.close_and_reopen(" else {");
    w.line("{}", run);
    w.close();
  } else {
    w.line("{}", run);
  }
  if (spec.epilogue) {
    std::vector<Store> rest(spec.stores.begin() + 1, spec.stores.end());
    if (rest.empty()) return make_error("a GEMM epilogue that stores nothing");
    STITCH_TRY(emit_library_elementwise(ctx, subtask, "epilogue", {spec.batch, spec.m, spec.n},
                                        reshaped_epilogue(*spec.epilogue, spec), rest, w));
  }
  return {};
}

}  // namespace stitch::codegen
