// Pass "lower": each composite becomes the primitives the table in pass_lowering.cc promises, and
// the result verifies and keeps its output types.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/access.h"
#include "plan/kernel_layouts.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

ir::Graph lower(ir::Graph& graph, PlanOptions options = {}) {
  EXPECT_TRUE(ir::verify(graph).ok());
  auto lowered = lower_composites(graph, options);
  EXPECT_TRUE(lowered.ok()) << lowered.error().message;
  if (!lowered.ok()) return {};
  EXPECT_TRUE(ir::verify(*lowered).ok()) << ir::verify(*lowered).error().message;
  EXPECT_TRUE(check_shapes(*lowered, options).ok());
  return *lowered;
}

TEST(Lowering, MeanIsSumThenDivide) {
  GraphBuilder b;
  auto x = b.input("x", {4, 6, 5});
  b.output(b.node("mean", Op::mean_dim, {ref(x), ints({1})}, {4, 5}));
  const ir::Graph g = lower(b.graph());
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, Op::sum_dim_intlist);
  EXPECT_EQ(g.nodes[1].op, Op::div_tensor);
  EXPECT_EQ(g.nodes[1].id, "mean");  // the result keeps the captured id
  EXPECT_EQ(*g.nodes[1].args[1].as_double(), 6.0);
}

// nn.MultiheadAttention's batch_first in-projection as torch's matmul captures it: the input
// transposed to [seq, batch, k], the weight expanded over seq, a bmm, a bias add.
ir::Graph sequence_major_projection(bool transposed, bool bias) {
  GraphBuilder b;
  auto x = b.input("x", transposed ? std::vector<int64_t>{2, 3, 4} : std::vector<int64_t>{3, 2, 4});
  auto w = b.param("w", {5, 4});
  auto rows = transposed ? b.node("permute", Op::permute, {ref(x), ints({1, 0, 2})}, {3, 2, 4}) : x;
  auto wt = b.node("permute_1", Op::permute, {ref(w), ints({1, 0})}, {4, 5});
  auto expanded = b.node("expand", Op::expand, {ref(wt), ints({3, 4, 5})}, {3, 4, 5});
  auto product = b.node("bmm", Op::bmm, {ref(rows), ref(expanded)}, {3, 2, 5});
  auto viewed = b.node("view", Op::view, {ref(product), ints({3, 2, 5})}, {3, 2, 5});
  if (bias) {
    auto vector = b.param("bias", {5});
    b.output(b.node("add", Op::add_tensor, {ref(viewed), ref(vector)}, {3, 2, 5}));
  } else {
    b.output(viewed);
  }
  return b.graph();
}

TEST(Lowering, SequenceMajorBmmByOneWeightIsOneRowGemmWithItsBias) {
  ir::Graph graph = sequence_major_projection(true, true);
  const ir::Graph g = lower(graph);
  EXPECT_EQ(count_op(g, Op::bmm), 0);
  EXPECT_EQ(count_op(g, Op::add_tensor), 0);  // the bias went into the GEMM
  ASSERT_EQ(count_op(g, Op::addmm), 1);
  auto gemm = std::find_if(g.nodes.begin(), g.nodes.end(),
                           [](const ir::Node& n) { return n.op == Op::addmm; });
  EXPECT_EQ(gemm->outputs[0].shape, (std::vector<int64_t>{6, 5}));  // x's 2·3 rows as they lie
  // The output is the GEMM's rows seen as [seq, batch, n]: element (s, b) is row b·3 + s.
  auto values = fold_views(g);
  ASSERT_TRUE(values.ok());
  const Access& out = values->at(value_key(g.outputs[0]));
  EXPECT_EQ(g.nodes[out.base.index].op, Op::addmm);
  EXPECT_EQ(out.strides, (std::vector<int64_t>{5, 15, 1}));
}

TEST(Lowering, SequenceMajorBmmWithoutBiasIsOneMm) {
  ir::Graph graph = sequence_major_projection(true, false);
  const ir::Graph g = lower(graph);
  EXPECT_EQ(count_op(g, Op::bmm), 0);
  EXPECT_EQ(count_op(g, Op::mm), 1);
}

TEST(Lowering, BmmOverRowsAlreadyInOrderStaysABmm) {
  ir::Graph graph = sequence_major_projection(false, true);
  const ir::Graph g = lower(graph);
  EXPECT_EQ(count_op(g, Op::bmm), 1);
  EXPECT_EQ(count_op(g, Op::add_tensor), 1);
}

// nn.MultiheadAttention's out-projection as captured: rows [seq, batch·heads, dim] of a
// batch-first [batch, heads, seq, dim] value go to the GEMM as [seq·batch, heads·dim] (a reshape
// the strides cannot express), and its product is viewed [seq, batch, n] and permuted back to
// batch-first. `a_contiguous`: A is a plain [seq·batch, k] input instead.
ir::Graph permuted_rows_projection(bool a_contiguous) {
  GraphBuilder b;
  ir::ValueRef rows;
  if (a_contiguous) {
    rows = b.input("x", {6 * 2, 4 * 3});
  } else {
    auto x = b.input("x", {2 * 3, 6, 4});  // [batch·heads, seq, dim]
    auto seq_major = b.node("permute", Op::permute, {ref(x), ints({1, 0, 2})}, {6, 2 * 3, 4});
    rows = b.node("view", Op::view, {ref(seq_major), ints({6 * 2, 3 * 4})}, {6 * 2, 3 * 4});
  }
  auto w = b.param("w", {5, 12});
  auto bias = b.param("bias", {5});
  auto wt = b.node("permute_1", Op::permute, {ref(w), ints({1, 0})}, {12, 5});
  auto product = b.node("addmm", Op::addmm, {ref(bias), ref(rows), ref(wt)}, {12, 5});
  auto split = b.node("view_1", Op::view, {ref(product), ints({6, 2, 5})}, {6, 2, 5});
  b.output(b.node("permute_2", Op::permute, {ref(split), ints({1, 0, 2})}, {2, 6, 5}));
  return b.graph();
}

TEST(Lowering, GemmPermutedOverItsRowsRunsOnRowsInThatOrder) {
  ir::Graph graph = permuted_rows_projection(false);
  const ir::Graph g = lower(graph);
  ASSERT_EQ(count_op(g, Op::addmm), 1);
  // A: x [batch·heads, seq, dim] split [seq, batch, heads, dim] and permuted to rows (b, s) of
  // columns (h, d); the old view of x is gone.
  const ir::Node& gemm = *std::find_if(g.nodes.begin(), g.nodes.end(),
                                       [](const ir::Node& n) { return n.op == Op::addmm; });
  const ir::Node& rows = g.nodes[gemm.args[1].ref()->index];
  ASSERT_EQ(rows.op, Op::view);
  const ir::Node& ordered = g.nodes[rows.args[0].ref()->index];
  ASSERT_EQ(ordered.op, Op::permute);
  EXPECT_EQ(ordered.args[1].as_int_list(), (std::vector<int64_t>{1, 0, 2, 3}));
  EXPECT_EQ(g.type_of(*ordered.args[0].ref()).shape, (std::vector<int64_t>{6, 2, 3, 4}));
  EXPECT_EQ(count_op(g, Op::view), 3);  // split, rows, and the result; no dead view of x left
  // Materialized: one copy (A's rows), and the output is the GEMM's product as it lies.
  auto materialized = materialize_layouts(g, PlanOptions{});
  ASSERT_TRUE(materialized.ok()) << materialized.error().message;
  EXPECT_EQ(count_op(*materialized, Op::clone), 1);
  auto values = fold_views(*materialized);
  ASSERT_TRUE(values.ok()) << values.error().message;
  const Access& out = values->at(value_key(materialized->outputs[0]));
  EXPECT_EQ(materialized->nodes[out.base.index].op, Op::addmm);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 6, 5}));
  EXPECT_TRUE(out.is_contiguous());
}

TEST(Lowering, GemmOverRowsItCanReadAsTheyLieKeepsItsPermute) {
  ir::Graph graph = permuted_rows_projection(true);
  const ir::Graph g = lower(graph);
  EXPECT_EQ(count_op(g, Op::permute), 2);  // the weight's and the one after the GEMM
  auto values = fold_views(g);
  ASSERT_TRUE(values.ok()) << values.error().message;
  EXPECT_FALSE(values->at(value_key(g.outputs[0])).is_contiguous());
}

TEST(Lowering, NonAdjacentSumReducesBlockByBlock) {
  GraphBuilder b;
  auto x = b.input("x", {2, 3, 4, 5});
  b.output(b.node("sum", Op::sum_dim_intlist, {ref(x), ints({0, 2, 3})}, {3}));
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::sum_dim_intlist), 2);  // dims {2,3}, then {0}
  EXPECT_EQ(g.type_of(g.outputs[0]).shape, (std::vector<int64_t>{3}));
}

TEST(Lowering, SizeOneReductionsAreViews) {
  GraphBuilder b;
  auto x = b.input("x", {4, 1});
  auto max = b.multi("max", Op::max_dim, {ref(x), integer(1), flag(true)}, {{4, 1}, {4, 1}});
  b.graph().nodes.back().outputs[1].dtype = ir::DType::int64;
  b.output(max);
  b.output(ir::ValueRef{ir::ValueRef::Kind::node, max.index, 1});
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::max_dim), 0);
  EXPECT_EQ(count_op(g, Op::full), 1);  // indices are all zero
}

TEST(Lowering, MaxDimWithoutIndicesIsAmax) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto max = b.multi("max", Op::max_dim, {ref(x), integer(1)}, {{4}, {4}});
  b.graph().nodes.back().outputs[1].dtype = ir::DType::int64;
  b.output(max);
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::amax), 1);
  EXPECT_EQ(count_op(g, Op::max_dim), 0);
}

TEST(Lowering, BatchNormOverNchwIsOneStatisticsPass) {
  GraphBuilder b;
  auto x = b.input("x", {8, 4, 6, 6});
  auto w = b.param("w", {4});
  auto bias = b.param("b", {4});
  auto mean = b.param("rm", {4});
  auto var = b.param("rv", {4});
  b.output(
      b.multi("bn", Op::batch_norm_functional,
              {ref(x), ref(w), ref(bias), ref(mean), ref(var), flag(true), num(0.1), num(1e-5)},
              {{8, 4, 6, 6}, {4}, {4}, {4}, {4}}));
  const ir::Graph g = lower(b.graph());
  // One Welford pass over N, H, W of the channels-first view, read in place (no copy).
  EXPECT_EQ(count_op(g, Op::var_mean_correction), 1);
  EXPECT_EQ(count_op(g, Op::sum_dim_intlist), 0);
  EXPECT_EQ(count_op(g, Op::permute), 1);
  EXPECT_EQ(count_op(g, Op::rsqrt), 1);
  EXPECT_EQ(g.nodes[g.outputs[0].index].id, "bn");
  auto materialized = materialize_layouts(g, {});
  ASSERT_TRUE(materialized.ok()) << materialized.error().message;
  EXPECT_EQ(count_op(*materialized, Op::clone), 0);
}

// --inference: eval semantics whatever the capture's mode — the running statistics and the affine
// fold into one per-channel scale and shift (param-only work, done at init), no statistics pass.
TEST(Lowering, InferenceOptionFoldsATrainingBatchNormIntoAnAffine) {
  GraphBuilder b;
  auto x = b.input("x", {8, 4, 6, 6});
  auto w = b.param("w", {4});
  auto bias = b.param("b", {4});
  auto mean = b.param("rm", {4});
  auto var = b.param("rv", {4});
  b.output(
      b.multi("bn", Op::batch_norm_functional,
              {ref(x), ref(w), ref(bias), ref(mean), ref(var), flag(true), num(0.1), num(1e-5)},
              {{8, 4, 6, 6}, {4}, {4}, {4}, {4}}));
  PlanOptions inference;
  inference.inference = true;
  const ir::Graph g = lower(b.graph(), inference);
  EXPECT_EQ(count_op(g, Op::var_mean_correction), 0);
  EXPECT_EQ(count_op(g, Op::rsqrt), 1);
  EXPECT_EQ(count_op(g, Op::mul_tensor), 3);  // scale = w·rstd, mean·scale, x·scale
  EXPECT_EQ(g.nodes[g.outputs[0].index].id, "bn");
  EXPECT_EQ(count_op(lower(b.graph()), Op::var_mean_correction), 1);  // training by default
}

TEST(Lowering, InstanceNormBecomesLayerNormRows) {
  GraphBuilder b;
  auto x = b.input("x", {1, 32, 8, 8});
  b.output(b.multi("in", Op::batch_norm_no_stats,
                   {ref(x), ir::Arg{}, ir::Arg{}, flag(true), num(0.1), num(1e-5)},
                   {{1, 32, 8, 8}, {32}, {32}}));
  const ir::Graph g = lower(b.graph());
  ASSERT_EQ(count_op(g, Op::native_layer_norm), 1);
  EXPECT_EQ(*g.nodes[0].args[1].as_int_list(), (std::vector<int64_t>{8, 8}));
}

TEST(Lowering, SoftmaxOverMiddleDimDuplicatesExpForFusion) {
  GraphBuilder b;
  auto x = b.input("x", {4, 16, 8});
  b.output(b.node("softmax", Op::softmax, {ref(x), integer(1), flag(false)}, {4, 16, 8}));
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::amax), 1);
  EXPECT_EQ(count_op(g, Op::sum_dim_intlist), 1);
  EXPECT_EQ(count_op(g, Op::exp), 2);
  EXPECT_EQ(count_op(g, Op::softmax), 0);
  // Over the last dim it stays a row op.
  GraphBuilder last;
  auto y = last.input("y", {4, 16});
  last.output(last.node("softmax", Op::softmax, {ref(y), integer(-1), flag(false)}, {4, 16}));
  EXPECT_EQ(count_op(lower(last.graph()), Op::softmax), 1);
}

TEST(Lowering, LayerNormWithFewLongRowsIsSplit) {
  GraphBuilder b;
  auto x = b.input("x", {4, 1 << 20});
  b.output(b.multi("ln", Op::native_layer_norm,
                   {ref(x), ints({1 << 20}), ir::Arg{}, ir::Arg{}, num(1e-5)},
                   {{4, 1 << 20}, {4, 1}, {4, 1}}));
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::native_layer_norm), 0);
  EXPECT_EQ(count_op(g, Op::var_mean_correction), 1);
}

// native_group_norm(x [8, 16, 32], N 8, C 16, HxW 32, 4 groups), then tanh; the result returned
// as it is, reduced (a sum over the channels, as a logsumexp or mean would), or permuted and then
// reduced.
enum class After { returned, reduced, permuted_then_reduced };
ir::Graph group_norm_then(After after) {
  GraphBuilder b;
  auto x = b.input("x", {8, 16, 32});
  auto gn = b.multi(
      "gn", Op::native_group_norm,
      {ref(x), ir::Arg{}, ir::Arg{}, integer(8), integer(16), integer(32), integer(4), num(1e-5)},
      {{8, 16, 32}, {8, 4}, {8, 4}});
  auto t = b.node("tanh", Op::tanh, {ref(gn)}, {8, 16, 32});
  if (after == After::returned) {
    b.output(t);
  } else if (after == After::reduced) {
    b.output(b.node("sum", Op::sum_dim_intlist, {ref(t), ints({1}), flag(true)}, {8, 1, 32}));
  } else {
    auto p = b.node("permute", Op::permute, {ref(t), ints({0, 2, 1})}, {8, 32, 16});
    b.output(b.node("sum", Op::sum_dim_intlist, {ref(p), ints({2}), flag(true)}, {8, 32, 1}));
  }
  return lower(b.graph());
}

TEST(Lowering, AGroupNormFeedingOnlyReductionsLeavesItsNormalizationToTheirPrologues) {
  const ir::Graph reduced = group_norm_then(After::reduced);
  EXPECT_EQ(count_op(reduced, Op::native_layer_norm), 0);
  EXPECT_EQ(count_op(reduced, Op::var_mean_correction), 1);
  // Returned (written out anyway): one row kernel, statistics and normalization together.
  const ir::Graph returned = group_norm_then(After::returned);
  EXPECT_EQ(count_op(returned, Op::native_layer_norm), 1);
  EXPECT_EQ(count_op(returned, Op::var_mean_correction), 0);
  // Reduced through a permutation, which a reduction's prologue would not fuse: the row kernel.
  const ir::Graph permuted = group_norm_then(After::permuted_then_reduced);
  EXPECT_EQ(count_op(permuted, Op::native_layer_norm), 1);
  EXPECT_EQ(count_op(permuted, Op::var_mean_correction), 0);
}

TEST(Lowering, AddmmWithColumnBiasAndGemv) {
  GraphBuilder b;
  auto bias = b.input("bias", {8, 1});
  auto a = b.input("a", {8, 16});
  auto w = b.input("w", {16, 4});
  auto v = b.input("v", {16, 1});
  b.output(b.node("addmm", Op::addmm, {ref(bias), ref(a), ref(w)}, {8, 4}));
  b.output(b.node("gemv", Op::mm, {ref(a), ref(v)}, {8, 1}));
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::addmm), 0);
  EXPECT_EQ(count_op(g, Op::mm), 1);               // the addmm's product
  EXPECT_EQ(count_op(g, Op::sum_dim_intlist), 1);  // the matrix-vector product
}

TEST(Lowering, LogsumexpAndNorm) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  b.output(b.node("lse", Op::logsumexp, {ref(x), ints({1})}, {4}));
  b.output(b.node("norm", Op::linalg_vector_norm, {ref(x), num(2.0), ints({1})}, {4}));
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::logsumexp), 1);  // one pass, no max-then-sum
  EXPECT_EQ(count_op(g, Op::amax), 0);
  EXPECT_EQ(count_op(g, Op::exp), 0);
  EXPECT_EQ(count_op(g, Op::sqrt), 1);
  EXPECT_EQ(count_op(g, Op::sum_dim_intlist), 1);  // the norm's
}

TEST(Lowering, LogsumexpOverSplitDimsIsOnePerBlock) {
  GraphBuilder b;
  auto x = b.input("x", {4, 5, 6, 7});
  b.output(b.node("lse", Op::logsumexp, {ref(x), ints({1, 3}), flag(true)}, {4, 1, 6, 1}));
  auto y = b.input("y", {4, 1, 6});
  b.output(b.node("lse_one", Op::logsumexp, {ref(y), ints({1})}, {4, 6}));  // size 1: a view
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::logsumexp), 2);  // dims 3, then 1: a logsumexp of logsumexps
}

TEST(Lowering, TilingPoolsAreViewsAndReductions) {
  GraphBuilder b;
  auto x = b.input("x", {8, 1, 1, 64});
  auto max = b.multi("max", Op::max_pool2d_with_indices, {ref(x), ints({1, 2}), ints({1, 2})},
                     {{8, 1, 1, 32}, {8, 1, 1, 32}});
  b.graph().nodes.back().outputs[1].dtype = ir::DType::int64;
  auto y = b.input("y", {2, 3, 9, 8});
  auto avg = b.node("avg", Op::avg_pool2d, {ref(y), ints({2, 2})}, {2, 3, 4, 4});  // drops row 8
  b.output(max);
  b.output(avg);
  EXPECT_TRUE(check_coverage(b.graph()).ok());
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::max_pool2d_with_indices) + count_op(g, Op::avg_pool2d), 0);
  EXPECT_EQ(count_op(g, Op::amax), 1);             // the window is one block (1 x 2)
  EXPECT_EQ(count_op(g, Op::sum_dim_intlist), 1);  // 2 x 2 windows moved last: one block too
  EXPECT_EQ(count_op(g, Op::slice_tensor), 1);
  // The reductions read the (sliced, permuted) input through its strides: no copy is inserted.
  auto materialized = materialize_layouts(g, {});
  ASSERT_TRUE(materialized.ok()) << materialized.error().message;
  EXPECT_EQ(count_op(*materialized, Op::clone), 0);
  // Overlapping windows stay whole (a direct pooling kernel); malformed args are refused.
  GraphBuilder overlap;
  auto z = overlap.input("z", {1, 1, 8, 8});
  overlap.output(
      overlap.node("pool", Op::avg_pool2d, {ref(z), ints({3, 3}), ints({1, 1})}, {1, 1, 6, 6}));
  EXPECT_TRUE(check_coverage(overlap.graph()).ok());
  EXPECT_EQ(count_op(lower(overlap.graph()), Op::avg_pool2d), 1);
  GraphBuilder bad;
  auto w = bad.input("w", {1, 1, 8, 8});
  bad.output(bad.node("pool", Op::avg_pool2d, {ref(w), ints({0, 3})}, {1, 1, 6, 6}));
  EXPECT_FALSE(check_coverage(bad.graph()).ok());
}

// The running statistics after the call (outputs 3 and 4, graph state updates): running ·
// (1 - momentum) + batch statistic · momentum, the variance unbiased (n = 8 rows: × 8/7).
TEST(Lowering, BatchNormRunningStatsBlendTheUnbiasedBatchStatistics) {
  GraphBuilder b;
  auto x = b.input("x", {8, 4});
  auto w = b.param("w", {4});
  auto mean = b.param("rm", {4});
  auto var = b.param("rv", {4});
  auto bn = b.multi("bn", Op::batch_norm_functional,
                    {ref(x), ref(w), ref(w), ref(mean), ref(var), flag(true), num(0.3), num(1e-5)},
                    {{8, 4}, {4}, {4}, {4}, {4}});
  b.output(bn);
  b.output(ir::ValueRef{ir::ValueRef::Kind::node, bn.index, 3});
  b.output(ir::ValueRef{ir::ValueRef::Kind::node, bn.index, 4});
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::var_mean_correction), 1);  // one statistics pass serves both
  auto scalar_of = [&](const std::string& suffix) {
    for (const ir::Node& node : g.nodes)
      if (node.id.ends_with(suffix)) return node.args.at(1).as_double().value_or(-1);
    ADD_FAILURE() << "no node " << suffix;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(scalar_of("running_mean_kept"), 0.7);
  EXPECT_DOUBLE_EQ(scalar_of("running_mean_added"), 0.3);
  EXPECT_DOUBLE_EQ(scalar_of("running_var_kept"), 0.7);
  EXPECT_DOUBLE_EQ(scalar_of("running_var_added"), 0.3 * 8.0 / 7.0);
  EXPECT_TRUE(g.nodes[g.outputs[1].index].id.ends_with("running_mean"));
  EXPECT_TRUE(g.nodes[g.outputs[2].index].id.ends_with("running_var"));
  PlanOptions inference;
  inference.inference = true;
  EXPECT_FALSE(lower_composites(b.graph(), inference).ok());  // eval semantics update nothing
}

}  // namespace
}  // namespace stitch::plan

namespace stitch::plan {
namespace {

// sum_n((x Wᵀ + b) / 2): no GEMM left, W summed over its rows, then x times that row summed.
TEST(Lowering, FlipOfAScanIsAReverseScanOfTheFlippedInput) {
  // flip(cumsum(flip(x, [1]), 1), [1]): one reverse cumsum reading flip(flip(x)), whose views fold
  // into x's own Access.
  GraphBuilder b;
  auto x = b.input("x", {4, 6});
  auto inner = b.node("flip_in", Op::flip, {ref(x), ints({1})}, {4, 6});
  auto scan = b.node("cumsum", Op::cumsum, {ref(inner), integer(1)}, {4, 6});
  b.output(b.node("flip_out", Op::flip, {ref(scan), ints({-1})}, {4, 6}));
  const ir::Graph g = lower(b.graph());
  ASSERT_EQ(count_op(g, Op::cumsum), 1);
  const ir::Node& reversed = g.nodes[g.outputs[0].index];
  EXPECT_EQ(reversed.op, Op::cumsum);
  EXPECT_TRUE(scan_reverse(reversed));
  EXPECT_FALSE(scan_exclusive(reversed));
  auto values = fold_views(g);
  ASSERT_TRUE(values.ok()) << values.error().message;
  const Access& input = values->at(value_key(*reversed.args[0].ref()));
  EXPECT_EQ(input, contiguous_access(x, {4, 6}));
}

TEST(Lowering, FlipOfAScanAlongAnotherDimOrUsedTwiceStays) {
  GraphBuilder b;
  auto x = b.input("x", {4, 6});
  auto scan = b.node("cumsum", Op::cumprod, {ref(x), integer(1)}, {4, 6});
  b.output(b.node("flip", Op::flip, {ref(scan), ints({0})}, {4, 6}));
  ir::Graph g = lower(b.graph());  // a flip over dim 0 commutes with a scan over dim 1: left
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, Op::cumprod);
  EXPECT_FALSE(scan_reverse(g.nodes[0]));
  EXPECT_EQ(g.nodes[1].op, Op::flip);
  GraphBuilder twice;
  auto y = twice.input("y", {4, 6});
  auto used = twice.node("cumsum", Op::cumsum, {ref(y), integer(1)}, {4, 6});
  twice.output(twice.node("flip", Op::flip, {ref(used), ints({1})}, {4, 6}));
  twice.output(used);
  g = lower(twice.graph());  // the forward scan is an output too: it stays, and so does the flip
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, Op::cumsum);
  EXPECT_FALSE(scan_reverse(g.nodes[0]));
  EXPECT_EQ(g.nodes[1].op, Op::flip);
}

TEST(Lowering, SumOverGemmFeaturesBecomesAMatrixVectorProduct) {
  GraphBuilder b;
  auto x = b.input("x", {8, 16});
  auto w = b.param("w", {32, 16});
  auto bias = b.param("bias", {32});
  auto wt = b.node("permute", Op::permute, {ref(w), ints({1, 0})}, {16, 32});
  auto gemm = b.node("addmm", Op::addmm, {ref(bias), ref(x), ref(wt)}, {8, 32});
  auto half = b.node("div", Op::div_tensor, {ref(gemm), num(2.0)}, {8, 32});
  b.output(b.node("sum", Op::sum_dim_intlist, {ref(half), ints({1}), flag(true)}, {8, 1}));
  const ir::Graph g = lower(b.graph());
  EXPECT_EQ(count_op(g, Op::addmm), 0);
  EXPECT_EQ(count_op(g, Op::mm), 0);
  EXPECT_EQ(count_op(g, Op::sum_dim_intlist), 3);  // W's rows, x·row, the bias
  EXPECT_EQ(g.type_of(g.outputs[0]).shape, (std::vector<int64_t>{8, 1}));
  bool w_summed_over_rows = false;
  for (const ir::Node& node : g.nodes)
    if (node.op == Op::sum_dim_intlist && node.args[0].ref()->kind == ir::ValueRef::Kind::param &&
        g.type_of(*node.args[0].ref()).shape == std::vector<int64_t>{32, 16})
      w_summed_over_rows = node.args[1].as_int_list() == std::vector<int64_t>{0};
  EXPECT_TRUE(w_summed_over_rows);
  EXPECT_EQ(count_op(g, Op::div_tensor), 1) << "the scale is kept, on the [8, 1] result";
}

TEST(Lowering, GemmSumIsLeftAloneWhenTheGemmIsUsedOrTheChainIsNotLinear) {
  {  // The GEMM is also an output: it must run anyway.
    GraphBuilder b;
    auto x = b.input("x", {8, 16});
    auto w = b.input("w", {16, 32});
    auto gemm = b.node("mm", Op::mm, {ref(x), ref(w)}, {8, 32});
    b.output(b.node("sum", Op::sum_dim_intlist, {ref(gemm), ints({1}), flag(true)}, {8, 1}));
    b.output(gemm);
    EXPECT_EQ(count_op(lower(b.graph()), Op::mm), 1);
  }
  {  // A sigmoid between: not linear.
    GraphBuilder b;
    auto x = b.input("x", {8, 16});
    auto w = b.input("w", {16, 32});
    auto gemm = b.node("mm", Op::mm, {ref(x), ref(w)}, {8, 32});
    auto s = b.node("sigmoid", Op::sigmoid, {ref(gemm)}, {8, 32});
    b.output(b.node("sum", Op::sum_dim_intlist, {ref(s), ints({1}), flag(true)}, {8, 1}));
    EXPECT_EQ(count_op(lower(b.graph()), Op::mm), 1);
  }
  {  // Summed over the rows (dim 0), not the features.
    GraphBuilder b;
    auto x = b.input("x", {8, 16});
    auto w = b.input("w", {16, 32});
    auto gemm = b.node("mm", Op::mm, {ref(x), ref(w)}, {8, 32});
    b.output(b.node("sum", Op::sum_dim_intlist, {ref(gemm), ints({0}), flag(true)}, {1, 32}));
    EXPECT_EQ(count_op(lower(b.graph()), Op::mm), 1);
  }
}

}  // namespace
}  // namespace stitch::plan
