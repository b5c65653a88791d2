// Fusion legality rules F1-F6 (fusion.h), one or more cases each, on hand-built graphs.
#include <gtest/gtest.h>

#include "plan/fusion.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

struct Fused {
  ValueMap values;
  Fusion fusion;
};

Fused fuse_graph(const ir::Graph& graph) {
  EXPECT_TRUE(ir::verify(graph).ok());
  auto values = fold_views(graph);
  EXPECT_TRUE(values.ok());
  return {*values, fuse(graph, *values)};
}

ir::Node gelu(GraphBuilder& b, const std::string& id, const ir::ValueRef& x,
              std::vector<int64_t> shape, const char* approximate) {
  ir::Node node =
      new_node(id, Op::gelu, {ref(x)}, {contiguous_type(shape, ir::DType::float32)}, ir::Node{});
  node.kwargs.push_back({"approximate", ir::Arg{std::string(approximate)}});
  return node;
}

TEST(FusionF1, ConstantScalarFoldsOnlyIntoElementwiseOperands) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto zero = b.node("zero", Op::scalar_tensor, {num(0.0)}, {});
  auto gt = b.node("gt", Op::gt_scalar, {ref(x), num(0.0)}, {4, 8}, ir::DType::boolean);
  b.output(b.node("where", Op::where_self, {ref(gt), ref(zero), ref(x)}, {4, 8}));
  Uses uses(b.graph());
  EXPECT_TRUE(is_foldable_constant(b.graph(), uses, zero.index));
  b.output(zero);  // a graph output needs a buffer: no longer foldable
  Uses with_output(b.graph());
  EXPECT_FALSE(is_foldable_constant(b.graph(), with_output, zero.index));
}

TEST(FusionF2, DifferentElementCountsDoNotShareABody) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto w = b.param("w", {8});
  auto scaled = b.node("scaled", Op::mul_tensor, {ref(w), num(2.0)}, {8});  // [8]
  b.output(b.node("add", Op::add_tensor, {ref(x), ref(scaled)}, {4, 8}));   // [4, 8]
  const Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 2u);
  EXPECT_EQ(f.fusion.groups[0].body, (std::vector<int>{0}));
  EXPECT_EQ(f.fusion.groups[1].body, (std::vector<int>{1}));
}

TEST(FusionF3, ExclusiveProducerJoinsPrologueSharedOneDoesNot) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto square = b.node("square", Op::mul_tensor, {ref(x), ref(x)}, {4, 8});
  b.output(b.node("sum", Op::sum_dim_intlist, {ref(square), ints({1})}, {4}));
  Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 1u);
  EXPECT_EQ(f.fusion.groups[0].kind, GroupKind::reduction);
  EXPECT_EQ(f.fusion.groups[0].prologue, (std::vector<int>{square.index}));
  // Once `square` is also an output it must be stored: it cannot hide in the prologue.
  b.output(square);
  f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 2u);
  EXPECT_TRUE(f.fusion.groups[1].prologue.empty());
}

TEST(FusionScan, MaskIsThePrologueScaleTheEpilogueFlipAView) {
  // cumsum(flip(x) * mask, 1) * 0.5: the multiply joins the scan's prologue reading x through the
  // flip's negative stride, the scale its epilogue.
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto mask = b.input("mask", {4, 8}, ir::DType::boolean);
  auto flipped = b.node("flip", Op::flip, {ref(x), ints({1})}, {4, 8});
  auto masked = b.node("masked", Op::mul_tensor, {ref(flipped), ref(mask)}, {4, 8});
  auto scan = b.node("cumsum", Op::cumsum, {ref(masked), integer(1)}, {4, 8});
  b.output(b.node("half", Op::mul_tensor, {ref(scan), num(0.5)}, {4, 8}));
  const Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 1u);
  const Group& group = f.fusion.groups[0];
  EXPECT_EQ(group.kind, GroupKind::scan);
  EXPECT_EQ(group.anchor, scan.index);
  EXPECT_EQ(group.prologue, (std::vector<int>{masked.index}));
  EXPECT_EQ(group.body.size(), 1u);
  EXPECT_EQ(f.values.at(value_key(flipped)).strides, (std::vector<int64_t>{8, -1}));
  EXPECT_EQ(f.values.at(value_key(flipped)).offset, 7);
}

TEST(FusionF3, ReorderingViewBlocksPrologue) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto e = b.node("e", Op::exp, {ref(x)}, {4, 8});
  auto t = b.node("t", Op::permute, {ref(e), ints({1, 0})}, {8, 4});
  b.output(b.node("sum", Op::sum_dim_intlist, {ref(t), ints({1})}, {8}));
  const Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 2u);
  EXPECT_EQ(f.fusion.groups[0].kind, GroupKind::elementwise);
}

TEST(FusionF4, EpilogueNeedsAvailableOperands) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1}), flag(true)}, {4, 1});
  auto scaled = b.node("scaled", Op::mul_tensor, {ref(sum), num(0.5)}, {4, 1});  // joins
  auto other = b.node("other", Op::amax, {ref(x), ints({1}), flag(true)}, {4, 1});
  b.output(b.node("diff", Op::sub_tensor, {ref(scaled), ref(other)}, {4, 1}));
  const Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 2u);
  EXPECT_EQ(f.fusion.groups[0].body, (std::vector<int>{scaled.index}));
  // `diff` reads `other` of a later group: it joins that group's epilogue instead.
  EXPECT_EQ(f.fusion.groups[1].anchor, other.index);
  EXPECT_EQ(f.fusion.groups[1].body, (std::vector<int>{3}));
}

TEST(FusionF4, ElementwiseGroupTakesSiblingsSharingALoad) {
  GraphBuilder b;
  auto x = b.input("x", {16});
  auto a = b.node("a", Op::exp, {ref(x)}, {16});
  auto c = b.node("c", Op::log, {ref(x)}, {16});
  b.output(a);
  b.output(c);
  const Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 1u);
  EXPECT_EQ(f.fusion.groups[0].body.size(), 2u);
}

TEST(FusionF5, BiasAndReluFoldIntoTheLibraryEpilogue) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto w = b.param("w", {8, 16});
  auto bias = b.param("bias", {16});
  auto mm = b.node("mm", Op::mm, {ref(x), ref(w)}, {4, 16});
  auto add = b.node("add", Op::add_tensor, {ref(mm), ref(bias)}, {4, 16});
  b.output(b.node("relu", Op::relu, {ref(add)}, {4, 16}));
  const Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 1u);
  EXPECT_EQ(f.fusion.groups[0].library_epilogue, "bias_relu");
  EXPECT_EQ(f.fusion.groups[0].bias, bias);
  EXPECT_TRUE(f.fusion.groups[0].body.empty());
}

TEST(FusionF5, ErfGeluStaysInTheBodyTanhGeluFolds) {
  for (const char* approximate : {"none", "tanh"}) {
    GraphBuilder b;
    auto x = b.input("x", {4, 8});
    auto w = b.param("w", {8, 16});
    auto mm = b.node("mm", Op::mm, {ref(x), ref(w)}, {4, 16});
    b.graph().nodes.push_back(gelu(b, "gelu", mm, {4, 16}, approximate));
    b.output(ir::ValueRef{ir::ValueRef::Kind::node, 1, 0});
    const Fused f = fuse_graph(b.graph());
    ASSERT_EQ(f.fusion.groups.size(), 1u);
    const bool tanh = std::string(approximate) == "tanh";
    EXPECT_EQ(f.fusion.groups[0].library_epilogue, tanh ? "gelu" : "none");
    EXPECT_EQ(f.fusion.groups[0].body.size(), tanh ? 0u : 1u);
  }
}

TEST(FusionF5, ScaleFoldsIntoAlphaMatrixBiasDoesNotFold) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto w = b.param("w", {8, 16});
  auto full = b.input("full", {4, 16});
  auto mm = b.node("mm", Op::mm, {ref(x), ref(w)}, {4, 16});
  auto scaled = b.node("scaled", Op::div_tensor, {ref(mm), num(4.0)}, {4, 16});
  b.output(b.node("add", Op::add_tensor, {ref(scaled), ref(full)}, {4, 16}));
  const Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 1u);
  EXPECT_DOUBLE_EQ(f.fusion.groups[0].alpha, 0.25);
  EXPECT_EQ(f.fusion.groups[0].library_epilogue, "none");  // [4, 16] is not a column vector
  EXPECT_EQ(f.fusion.groups[0].body, (std::vector<int>{2}));
}

TEST(FusionF6, StoresWhatLeavesTheGroup) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto e = b.node("e", Op::exp, {ref(x)}, {4, 8});
  auto r = b.node("r", Op::relu, {ref(e)}, {4, 8});
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(e), ints({1})}, {4});
  b.output(r);
  b.output(sum);
  Uses uses(b.graph());
  EXPECT_TRUE(must_store(b.graph(), uses, e, {e.index, r.index}));  // sum reads it
  EXPECT_FALSE(must_store(b.graph(), uses, e, {e.index, r.index, sum.index}));
  EXPECT_TRUE(must_store(b.graph(), uses, r, {e.index, r.index}));  // an output
}

TEST(FusionRms, MatchesLastDimPatternOnly) {
  GraphBuilder b;
  auto x = b.input("x", {8, 64});
  auto w = b.param("w", {64});
  auto sq = b.node("sq", Op::pow_tensor_scalar, {ref(x), num(2.0)}, {8, 64});
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(sq), ints({-1}), flag(true)}, {8, 1});
  auto mean = b.node("mean", Op::div_tensor, {ref(sum), num(64.0)}, {8, 1});
  auto eps = b.node("eps", Op::add_tensor, {ref(mean), num(1e-6)}, {8, 1});
  auto root = b.node("root", Op::rsqrt, {ref(eps)}, {8, 1});
  auto y = b.node("y", Op::mul_tensor, {ref(x), ref(root)}, {8, 64});
  auto out = b.node("out", Op::mul_tensor, {ref(y), ref(w)}, {8, 64});
  b.output(out);
  auto values = fold_views(b.graph());
  ASSERT_TRUE(values.ok());
  Uses uses(b.graph());
  auto group = match_rms_norm(b.graph(), uses, *values, sum.index);
  ASSERT_TRUE(group);
  EXPECT_EQ(group->anchor, out.index);
  EXPECT_EQ(group->rms_weight, w);
  EXPECT_DOUBLE_EQ(group->rms_eps, 1e-6);
  // A divisor that is not the row length is not a mean: no match.
  b.graph().nodes[mean.index].args[1] = num(32.0);
  EXPECT_FALSE(match_rms_norm(b.graph(), uses, *values, sum.index));
}

}  // namespace
}  // namespace stitch::plan
