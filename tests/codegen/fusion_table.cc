// The fusion rows (fusion_table.h), built with the Planner tests' GraphBuilder.
#include "fusion_table.h"

#include <algorithm>
#include <cmath>

#include "../plan/plan_test_graphs.h"

namespace stitch::codegen::testing {
namespace {

using ir::Op;
using plan::testing::flag;
using plan::testing::GraphBuilder;
using plan::testing::ints;
using plan::testing::num;
using plan::testing::ref;

constexpr Tolerance kSum{1e-6, 1e-5};
constexpr int64_t kRows = 4, kCols = 8;

double row_sum(const std::vector<double>& x, int64_t r) {
  double s = 0;
  for (int64_t c = 0; c < kCols; ++c) s += x[r * kCols + c];
  return s;
}

FusionCase anchors() {  // F1: two reductions of one input are two groups
  GraphBuilder b;
  auto x = b.input("x", {kRows, kCols});
  b.output(b.node("amax", Op::amax, {ref(x), ints({1})}, {kRows}));
  b.output(b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1})}, {kRows}));
  return {"two_reductions", "F1", b.graph(), {"reduce", "reduce"}, [](const Values& in) {
            Values out(2);
            for (int64_t r = 0; r < kRows; ++r) {
              out[0].push_back(*std::max_element(in[0].begin() + r * kCols,
                                                 in[0].begin() + (r + 1) * kCols));
              out[1].push_back(row_sum(in[0], r));
            }
            return out;
          }, kSum};
}

FusionCase index_space() {  // F2: [8] and [4, 8] bodies stay apart
  GraphBuilder b;
  auto x = b.input("x", {kRows, kCols});
  auto w = b.param("w", {kCols});
  auto scaled = b.node("scaled", Op::mul_tensor, {ref(w), num(2.0)}, {kCols});
  b.output(b.node("add", Op::add_tensor, {ref(x), ref(scaled)}, {kRows, kCols}));
  return {"broadcast_add", "F2", b.graph(), {"elementwise", "elementwise"}, [](const Values& in) {
            Values out(1);
            for (int64_t e = 0; e < kRows * kCols; ++e)
              out[0].push_back(in[0][e] + 2 * in[1][e % kCols]);
            return out;
          }, Tolerance{0, 2.5e-7}};
}

FusionCase prologue() {  // F3: an exclusive producer joins the reduction's prologue
  GraphBuilder b;
  auto x = b.input("x", {kRows, kCols});
  auto square = b.node("square", Op::mul_tensor, {ref(x), ref(x)}, {kRows, kCols});
  b.output(b.node("sum", Op::sum_dim_intlist, {ref(square), ints({1})}, {kRows}));
  return {"sum_of_squares", "F3", b.graph(), {"reduce"}, [](const Values& in) {
            Values out(1);
            for (int64_t r = 0; r < kRows; ++r) {
              double s = 0;
              for (int64_t c = 0; c < kCols; ++c) s += in[0][r * kCols + c] * in[0][r * kCols + c];
              out[0].push_back(s);
            }
            return out;
          }, kSum};
}

FusionCase epilogue() {  // F4: a consumer of the reduced value joins the epilogue
  GraphBuilder b;
  auto x = b.input("x", {kRows, kCols});
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1}), flag(true)}, {kRows, 1});
  b.output(b.node("scaled", Op::mul_tensor, {ref(sum), num(0.5)}, {kRows, 1}));
  return {"scaled_sum", "F4", b.graph(), {"reduce"}, [](const Values& in) {
            Values out(1);
            for (int64_t r = 0; r < kRows; ++r) out[0].push_back(0.5 * row_sum(in[0], r));
            return out;
          }, kSum};
}

// F4: BatchNorm's running-statistics blend, running * 0.7 + mean * 0.3: the side chain on the param
// joins the reduction's epilogue with the blend.
FusionCase side_chain() {
  GraphBuilder b;
  auto x = b.input("x", {kRows, kCols});
  auto running = b.param("running", {kRows});
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1})}, {kRows});
  auto kept = b.node("kept", Op::mul_tensor, {ref(running), num(0.7)}, {kRows});
  auto added = b.node("added", Op::mul_tensor, {ref(sum), num(0.3 / kCols)}, {kRows});
  b.output(b.node("blended", Op::add_tensor, {ref(kept), ref(added)}, {kRows}));
  return {"running_blend", "F4", b.graph(), {"reduce"}, [](const Values& in) {
            Values out(1);
            for (int64_t r = 0; r < kRows; ++r)
              out[0].push_back(0.7 * in[1][r] + 0.3 / kCols * row_sum(in[0], r));
            return out;
          }, kSum};
}

FusionCase library() {  // F5: bias and ReLU fold into cuBLASLt's epilogue
  GraphBuilder b;
  auto x = b.input("x", {kRows, kCols});
  auto w = b.param("w", {kCols, 16});
  auto bias = b.param("bias", {16});
  auto mm = b.node("mm", Op::mm, {ref(x), ref(w)}, {kRows, 16});
  auto add = b.node("add", Op::add_tensor, {ref(mm), ref(bias)}, {kRows, 16});
  b.output(b.node("relu", Op::relu, {ref(add)}, {kRows, 16}));
  return {"linear_relu", "F5", b.graph(), {"cublaslt_matmul"}, [](const Values& in) {
            Values out(1);
            for (int64_t r = 0; r < kRows; ++r)
              for (int64_t n = 0; n < 16; ++n) {
                double acc = in[2][n];
                for (int64_t k = 0; k < kCols; ++k) acc += in[0][r * kCols + k] * in[1][k * 16 + n];
                out[0].push_back(std::max(acc, 0.0));
              }
            return out;
          }, kSum};
}

FusionCase stores() {  // F6: a group value is stored when it is an output, even inside the body
  GraphBuilder b;
  auto x = b.input("x", {16});
  auto a = b.node("a", Op::exp, {ref(x)}, {16});
  b.output(a);
  b.output(b.node("c", Op::mul_tensor, {ref(a), num(2.0)}, {16}));
  return {"exp_and_double", "F6", b.graph(), {"elementwise"}, [](const Values& in) {
            Values out(2);
            for (double v : in[0]) {
              out[0].push_back(std::exp(v));
              out[1].push_back(2 * std::exp(v));
            }
            return out;
          }, Tolerance{1e-6, 4e-6}};
}

FusionCase order() {  // F7: the group reading a reduction runs after it
  GraphBuilder b;
  auto x = b.input("x", {kRows, kCols});
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1}), flag(true)}, {kRows, 1});
  b.output(b.node("centered", Op::sub_tensor, {ref(x), ref(sum)}, {kRows, kCols}));
  return {"minus_row_sum", "F7", b.graph(), {"reduce", "elementwise"}, [](const Values& in) {
            Values out(1);
            for (int64_t e = 0; e < kRows * kCols; ++e)
              out[0].push_back(in[0][e] - row_sum(in[0], e / kCols));
            return out;
          }, kSum};
}

FusionCase detached_scalar() {  // F9: a returned count + 1 rides on the next reduction
  GraphBuilder b;
  auto steps = b.input("steps", {});
  auto x = b.input("x", {kRows, kCols});
  b.output(b.node("count", Op::add_tensor, {ref(steps), num(1.0)}, {}));
  b.output(b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1})}, {kRows}));
  return {"count_with_sum", "F9", b.graph(), {"reduce"}, [](const Values& in) {
            Values out(2);
            out[0].push_back(in[0][0] + 1);
            for (int64_t r = 0; r < kRows; ++r) out[1].push_back(row_sum(in[1], r));
            return out;
          }, kSum};
}

FusionCase attention() {  // F8: softmax(Q Kᵀ · c) V is one attention subtask
  constexpr int64_t kSeq = 4, kDim = 8;
  GraphBuilder b;
  auto q = b.input("q", {1, 1, kSeq, kDim});
  auto k = b.input("k", {1, 1, kSeq, kDim});
  auto v = b.input("v", {1, 1, kSeq, kDim});
  auto kt = b.node("permute", Op::permute, {ref(k), ints({0, 1, 3, 2})}, {1, 1, kDim, kSeq});
  auto qv = b.node("view", Op::view, {ref(q), ints({1, kSeq, kDim})}, {1, kSeq, kDim});
  auto ktv = b.node("view_1", Op::view, {ref(kt), ints({1, kDim, kSeq})}, {1, kDim, kSeq});
  auto scores = b.node("bmm", Op::bmm, {ref(qv), ref(ktv)}, {1, kSeq, kSeq});
  auto scaled = b.node("mul", Op::mul_tensor, {ref(scores), num(0.125)}, {1, kSeq, kSeq});
  auto p = b.node("_softmax", Op::softmax, {ref(scaled), plan::testing::integer(-1), flag(false)},
                  {1, kSeq, kSeq});
  auto vv = b.node("view_2", Op::view, {ref(v), ints({1, kSeq, kDim})}, {1, kSeq, kDim});
  auto o = b.node("bmm_1", Op::bmm, {ref(p), ref(vv)}, {1, kSeq, kDim});
  b.output(b.node("view_3", Op::view, {ref(o), ints({1, 1, kSeq, kDim})}, {1, 1, kSeq, kDim}));
  return {"softmax_attention", "F8", b.graph(), {"flash_attention"}, [](const Values& in) {
            Values out(1);
            for (int64_t i = 0; i < kSeq; ++i) {
              std::vector<double> w(kSeq);
              double top = -INFINITY, total = 0;
              for (int64_t j = 0; j < kSeq; ++j) {
                double dot = 0;
                for (int64_t d = 0; d < kDim; ++d) dot += in[0][i * kDim + d] * in[1][j * kDim + d];
                w[j] = 0.125 * dot;
                top = std::max(top, w[j]);
              }
              for (double& x : w) total += (x = std::exp(x - top));
              for (int64_t d = 0; d < kDim; ++d) {
                double acc = 0;
                for (int64_t j = 0; j < kSeq; ++j) acc += w[j] / total * in[2][j * kDim + d];
                out[0].push_back(acc);
              }
            }
            return out;
          }, kSum};
}

FusionCase conv_prologue() {  // F10: a depthwise convolution normalises its input as it loads
  constexpr int64_t kC = 2, kH = 4, kW = 4;
  GraphBuilder b;
  auto x = b.input("x", {1, kC, kH, kW});
  auto scale = b.param("scale", {1, kC, 1, 1});
  auto shift = b.param("shift", {1, kC, 1, 1});
  auto w = b.param("w", {kC, 1, 3, 3});
  auto scaled = b.node("scaled", Op::mul_tensor, {ref(x), ref(scale)}, {1, kC, kH, kW});
  auto shifted = b.node("shifted", Op::add_tensor, {ref(scaled), ref(shift)}, {1, kC, kH, kW});
  auto relu = b.node("relu", Op::relu, {ref(shifted)}, {1, kC, kH, kW});
  b.output(b.node("conv", Op::convolution,
                  {ref(relu), ref(w), ir::Arg{}, ints({1, 1}), ints({1, 1}), ints({1, 1}),
                   flag(false), ints({0, 0}), plan::testing::integer(kC)},
                  {1, kC, kH, kW}));
  return {"normalised_depthwise",
          "F10",
          b.graph(),
          {"depthwise_conv"},
          [](const Values& in) {
            // in: x, scale, shift, w. Padding pads the normalised input with zeros.
            Values out(1);
            for (int64_t c = 0; c < kC; ++c)
              for (int64_t h = 0; h < kH; ++h)
                for (int64_t wi = 0; wi < kW; ++wi) {
                  double acc = 0;
                  for (int64_t i = 0; i < 3; ++i)
                    for (int64_t j = 0; j < 3; ++j) {
                      const int64_t ih = h + i - 1, iw = wi + j - 1;
                      if (ih < 0 || ih >= kH || iw < 0 || iw >= kW) continue;
                      const double v = in[0][(c * kH + ih) * kW + iw] * in[1][c] + in[2][c];
                      acc += std::max(v, 0.0) * in[3][(c * 3 + i) * 3 + j];
                    }
                  out[0].push_back(acc);
                }
            return out;
          },
          kSum};
}

FusionCase sink() {  // F11: a pass only a later one reads (past a reduction) runs inside it
  GraphBuilder b;
  auto x = b.input("x", {kRows, kCols});
  auto z = b.input("z", {kRows, kCols});
  auto main = b.node("main", Op::relu, {ref(x)}, {kRows, kCols});
  auto total = b.node("total", Op::sum_dim_intlist, {ref(z), ints({1}), flag(true)}, {kRows, 1});
  auto shortcut = b.node("shortcut", Op::mul_tensor, {ref(z), ref(total)}, {kRows, kCols});
  b.output(b.node("out", Op::add_tensor, {ref(main), ref(shortcut)}, {kRows, kCols}));
  return {"residual_sink",
          "F11",
          b.graph(),
          {"reduce", "elementwise"},
          [](const Values& in) {
            Values out(1);
            for (int64_t e = 0; e < kRows * kCols; ++e)
              out[0].push_back(std::max(in[0][e], 0.0) + in[1][e] * row_sum(in[1], e / kCols));
            return out;
          },
          kSum};
}

}  // namespace

const std::vector<FusionCase>& fusion_cases() {
  static const std::vector<FusionCase> cases = {
      anchors(), index_space(), prologue(),  epilogue(),        side_chain(),    library(),
      stores(),  order(),       attention(), detached_scalar(), conv_prologue(), sink()};
  return cases;
}

std::vector<double> fusion_values(int64_t count, int index) {
  std::vector<double> values;
  for (int64_t i = 0; i < count; ++i)
    values.push_back(static_cast<double>(static_cast<float>(std::sin(1.3 * i + 0.7 * index + 0.1))));
  return values;
}

}  // namespace stitch::codegen::testing
