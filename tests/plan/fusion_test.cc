// Fusion legality rules F1-F6, F9 and F11 (fusion.h), one or more cases each, on hand-built
// graphs.
#include <gtest/gtest.h>

#include <algorithm>

#include "plan/fusion.h"
#include "plan/planner.h"
#include "plan/subtasks.h"
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

// BatchNorm's running-mean update after its statistics: running * 0.7 reads no reduced value, so it
// waits as a side chain until the blend that adds the batch mean joins the epilogue, and joins with
// it; a side chain no joining node reads is swept on its own.
TEST(FusionF4, SideChainJoinsWithTheNodeThatReadsIt) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto running = b.param("running", {4});
  auto other = b.param("other", {4});
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1})}, {4});
  auto kept = b.node("kept", Op::mul_tensor, {ref(running), num(0.7)}, {4});
  auto lone = b.node("lone", Op::mul_tensor, {ref(other), num(2.0)}, {4});
  auto added = b.node("added", Op::mul_tensor, {ref(sum), num(0.3)}, {4});
  auto blended = b.node("blended", Op::add_tensor, {ref(kept), ref(added)}, {4});
  b.output(blended);
  b.output(lone);
  const Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 2u);
  EXPECT_EQ(f.fusion.groups[0].anchor, sum.index);
  EXPECT_EQ(f.fusion.groups[0].body, (std::vector<int>{kept.index, added.index, blended.index}));
  EXPECT_EQ(f.fusion.groups[1].kind, GroupKind::elementwise);
  EXPECT_EQ(f.fusion.groups[1].body, (std::vector<int>{lone.index}));
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

// BatchNorm's num_batches_tracked + 1: returned, read by nothing, computed from an input only. It
// joins the next reduction's epilogue; one that is read, or with no reduction after it, does not.
TEST(FusionF9, DetachedScalarJoinsTheNextReduction) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto tracked = b.input("tracked", {}, ir::DType::int64);
  auto count = b.node("count", Op::add_tensor, {ref(tracked), integer(1)}, {}, ir::DType::int64);
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1})}, {4});
  b.output(sum);
  b.output(count);
  Uses uses(b.graph());
  EXPECT_TRUE(is_detached_scalar(b.graph(), uses, count.index));
  EXPECT_FALSE(is_detached_scalar(b.graph(), uses, sum.index));  // four elements
  Fused f = fuse_graph(b.graph());
  ASSERT_EQ(f.fusion.groups.size(), 1u);
  EXPECT_EQ(f.fusion.groups[0].anchor, sum.index);
  EXPECT_EQ(f.fusion.groups[0].body, (std::vector<int>{count.index}));

  GraphBuilder late;  // the reduction comes first: the scalar has no host
  auto y = late.input("y", {4, 8});
  auto steps = late.input("steps", {}, ir::DType::int64);
  late.output(late.node("sum", Op::sum_dim_intlist, {ref(y), ints({1})}, {4}));
  late.output(late.node("count", Op::add_tensor, {ref(steps), integer(1)}, {}, ir::DType::int64));
  f = fuse_graph(late.graph());
  ASSERT_EQ(f.fusion.groups.size(), 2u);
  EXPECT_EQ(f.fusion.groups[1].kind, GroupKind::elementwise);

  b.output(b.node("twice", Op::mul_tensor, {ref(count), integer(2)}, {}, ir::DType::int64));
  Uses read(b.graph());
  EXPECT_FALSE(is_detached_scalar(b.graph(), read, count.index));  // a node reads it
}

// tests/tasks/plan_bn_running_stats.py (BatchNorm2d, then Linear, then BatchNorm1d, in training
// mode): per BatchNorm one statistics reduction that also writes the new running mean, running
// variance and num_batches_tracked (F4 side chains, F9), then the normalisation: no kernel of its
// own for any state update (11 subtasks before).
// A residual block's shape: relu(x) is one pass, the shortcut's sum over z comes after it, and
// only the final add reads relu(x): the first pass runs inside the add's (F11), which reads x
// instead of a stored relu(x). Not where relu(x) is also returned, or read through a reordering
// view, or is a constant (relu of a param: computed once at init).
TEST(FusionF11, AnElementwisePassOnlyALaterOneReadsSinksIntoIt) {
  auto groups_of = [](bool returned, bool transposed, bool constant = false) {
    GraphBuilder b;
    auto x = constant ? b.param("x", {4, 4}) : b.input("x", {4, 4});
    auto z = b.input("z", {4, 4});
    auto main = b.node("main", Op::relu, {ref(x)}, {4, 4});
    auto total = b.node("total", Op::sum_dim_intlist, {ref(z), ints({1}), flag(true)}, {4, 1});
    auto shortcut = b.node("shortcut", Op::mul_tensor, {ref(z), ref(total)}, {4, 4});
    ir::ValueRef read = main;
    if (transposed) read = b.node("t", Op::permute, {ref(main), ints({1, 0})}, {4, 4});
    b.output(b.node("out", Op::add_tensor, {ref(read), ref(shortcut)}, {4, 4}));
    if (returned) b.output(main);
    return fuse_graph(b.graph()).fusion.groups;
  };
  const std::vector<Group> sunk = groups_of(false, false);
  ASSERT_EQ(sunk.size(), 2u);  // the sum, then one pass: relu, the shortcut's product, the add
  EXPECT_EQ(sunk[1].kind, GroupKind::elementwise);
  EXPECT_EQ(sunk[1].body, (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(groups_of(true, false).size(), 3u);
  EXPECT_EQ(groups_of(false, true).size(), 3u);
  EXPECT_EQ(groups_of(false, false, true).size(), 3u);
}

TEST(FusionBatchNorm, StateUpdatesAreWrittenByTheStatisticsReduction) {
  auto graph = ir::load_graph(data_path("plan_bn_running_stats.graph.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto plan = make_plan(*graph, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::vector<std::string> kinds;
  for (const Subtask& subtask : plan->subtasks)
    kinds.emplace_back(spec_kind_name(subtask.spec));
  EXPECT_EQ(kinds, (std::vector<std::string>{"reduction", "elementwise", "matmul", "reduction",
                                             "elementwise"}));
  // The graph's outputs: y, then per BatchNorm running_mean, running_var, num_batches_tracked.
  ASSERT_EQ(plan->graph.outputs.size(), 7u);
  for (size_t bn = 0; bn < 2; ++bn) {
    const Subtask& reduction = plan->subtasks[bn == 0 ? 0 : 3];
    const std::vector<ir::ValueRef> writes = subtask_writes(reduction);
    for (size_t k = 1 + 3 * bn; k < 4 + 3 * bn; ++k)
      EXPECT_NE(std::find(writes.begin(), writes.end(), plan->graph.outputs[k]), writes.end())
          << reduction.id << " does not write " << plan->graph.name_of(plan->graph.outputs[k]);
  }
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
