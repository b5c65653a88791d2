// Concatenation written in place (plan/cat_placement.h): pieces whose producers can store through
// strides live in their window of the cat's buffer and need no copy; the others (graph inputs,
// values another cat or a graph output holds, results a library or the depthwise kernel writes
// whole) keep a copy into their window; DenseNet's growing cat nests into one buffer.
#include <gtest/gtest.h>

#include "plan/access.h"
#include "plan/cat_placement.h"
#include "plan/plan_check.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

// Copies per forward (not those at init, such as a merged GEMM's weights).
int copies(const Plan& plan) {
  int count = 0;
  for (const Subtask& subtask : plan.subtasks)
    count += std::holds_alternative<CopySpec>(subtask.spec) && !subtask.at_init;
  return count;
}

Plan plan_of(const ir::Graph& graph) {
  auto plan = make_plan(graph, {});
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  if (!plan.ok()) return {};
  auto parsed = parse_plan(serialize_plan(*plan));
  EXPECT_TRUE(parsed.ok() && *parsed == *plan);
  return std::move(*plan);
}

Plan fixture_plan(const std::string& task) {
  auto graph = ir::load_graph(data_path(task + ".graph.json"));
  EXPECT_TRUE(graph.ok());
  return graph.ok() ? plan_of(*graph) : Plan{};
}

bool has_slot(const Plan& plan, const std::string& value) {
  for (const BufferSlot& slot : plan.buffers)
    if (slot.value == value) return true;
  return false;
}

TEST(CatPlan, ElementwisePiecesStoreIntoTheirWindows) {
  GraphBuilder b;
  auto x = b.input("x", {4, 6});
  auto left = b.node("left", Op::relu, {ref(x)}, {4, 6});
  auto right = b.node("right", Op::tanh, {ref(x)}, {4, 6});
  b.output(b.node("joined", Op::cat, {list({left, right}), integer(1)}, {4, 12}));
  const Plan plan = plan_of(b.graph());
  EXPECT_EQ(copies(plan), 0);
  const Access& l = plan.values.at("left");
  const Access& r = plan.values.at("right");
  EXPECT_EQ(plan.graph.name_of(l.base), "joined");
  EXPECT_EQ(l.offset, 0);
  EXPECT_EQ(r.offset, 6);
  EXPECT_EQ(r.strides, (std::vector<int64_t>{12, 1}));
  EXPECT_FALSE(has_slot(plan, "left"));  // the output buffer holds both
  EXPECT_FALSE(has_slot(plan, "right"));
}

TEST(CatPlan, SharedPiecesAndOutputsAreCopied) {
  GraphBuilder b;
  auto x = b.input("x", {4, 6});
  auto twice = b.node("twice", Op::relu, {ref(x)}, {4, 6});
  auto shown = b.node("shown", Op::tanh, {ref(x)}, {4, 6});
  b.output(b.node("doubled", Op::cat, {list({twice, twice}), integer(0)}, {8, 6}));
  b.output(b.node("joined", Op::cat, {list({x, shown}), integer(1)}, {4, 12}));
  b.output(shown);
  const Plan plan = plan_of(b.graph());
  EXPECT_EQ(copies(plan), 4);  // twice twice, the input, and the graph output `shown`
  EXPECT_EQ(plan.graph.name_of(plan.values.at("twice").base), "twice");
  EXPECT_EQ(plan.graph.name_of(plan.values.at("shown").base), "shown");
}

TEST(CatPlan, GrowingCatsNestInOneBuffer) {
  GraphBuilder b;
  auto x = b.input("x", {2, 3});
  auto a = b.node("a", Op::relu, {ref(x)}, {2, 3});
  auto first = b.node("first", Op::cat, {list({x, a}), integer(1)}, {2, 6});
  auto c = b.node("c", Op::tanh, {ref(first)}, {2, 6});
  b.output(b.node("second", Op::cat, {list({x, a, c}), integer(1)}, {2, 12}));
  auto nested = nest_cats(b.graph());
  ASSERT_TRUE(nested.ok());
  const ir::ArgList& pieces = *nested->nodes.back().args[0].list();
  ASSERT_EQ(pieces.size(), 2u);  // cat(first, c)
  EXPECT_EQ(*pieces[0].ref(), first);
  const Plan plan = plan_of(b.graph());
  EXPECT_EQ(copies(plan), 1);  // only the input x, into second[:, 0:3]
  EXPECT_EQ(plan.graph.name_of(plan.values.at("first").base), "second");
  EXPECT_EQ(plan.values.at("a").offset, 3);
  EXPECT_EQ(plan.values.at("c").offset, 6);
  EXPECT_FALSE(has_slot(plan, "first"));
}

// A convolution's result without an epilogue (DenseNet's bias-free layers) is written into its
// window of whole channels by whichever engine runs it — cuDNN through y's image stride — also
// through the alias a p = 0 dropout leaves; the depthwise kernel and a transposed convolution
// write dense, so their results are copied.
TEST(CatPlan, ConvolutionResultsStoreIntoTheirWindows) {
  auto plan_cat_of = [](int64_t groups, bool transposed, bool through_alias) {
    GraphBuilder b;
    const std::vector<int64_t> shape{2, 8, 12, 12};
    auto x = b.input("x", shape);
    auto w = b.param("w", {8, 8 / groups, 3, 3});
    ir::ValueRef y = b.node("c", Op::convolution,
                            {ref(x), ref(w), ir::Arg{}, ints({1, 1}), ints({1, 1}), ints({1, 1}),
                             ir::Arg{transposed}, ints({0, 0}), integer(groups)},
                            shape);
    if (through_alias) y = b.node("dropped", Op::alias, {ref(y)}, shape);
    b.output(b.node("joined", Op::cat, {list({x, y}), integer(1)}, {2, 16, 12, 12}));
    return plan_of(b.graph());
  };
  const Plan dense = plan_cat_of(1, false, false);
  EXPECT_EQ(copies(dense), 1);  // the input x only
  const Access& result = dense.values.at("c");
  EXPECT_EQ(dense.graph.name_of(result.base), "joined");
  EXPECT_EQ(result.offset, 8 * 144);
  EXPECT_TRUE(is_dense_per_image(result));
  EXPECT_TRUE(check_plan(dense).ok());
  Plan on_depthwise = dense;  // the depthwise kernel writes dense: plan_check refuses the window
  for (Subtask& subtask : on_depthwise.subtasks)
    if (std::holds_alternative<ConvSpec>(subtask.spec)) subtask.kernel = "depthwise_conv";
  const Status refused = check_plan(on_depthwise);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("cannot write this convolution's result"),
            std::string::npos)
      << refused.error().message;
  EXPECT_EQ(copies(plan_cat_of(1, false, true)), 1);   // the alias renames the stored result
  EXPECT_EQ(copies(plan_cat_of(8, false, false)), 2);  // depthwise
  EXPECT_EQ(copies(plan_cat_of(1, true, false)), 2);   // transposed
}

TEST(CatPlan, OwnTasks) {
  // Fire module: both expand epilogues (bias + ReLU) store into the output; no copy.
  const Plan fire = fixture_plan("plan_cat_fire");
  EXPECT_EQ(copies(fire), 0);
  // Inception: each branch's bias add (the convolution's epilogue) stores into its slice; the
  // 1x1 branch has no bias: cuDNN writes its result whole, copied.
  EXPECT_EQ(copies(fixture_plan("plan_cat_inception")), 1);
  // Dense block: the block's input is the one copy; every layer writes its slice.
  EXPECT_EQ(copies(fixture_plan("plan_cat_dense_block")), 1);  // cat([x]) is x itself
}

// The batch statistics a training-mode BatchNorm takes of a channel cat: each feature's channels
// reduced once where the features already reduced are large (32 MiB each here), the layers'
// statistics cats of the per-feature results that the reductions write in place; with small
// features one reduction over the whole cat per layer (its epilogue then fused).
TEST(CatPlan, BatchStatisticsOfLargeFeaturesAreReducedOncePerFeature) {
  auto reduced_channels = [](const Plan& plan) {
    std::vector<int64_t> rows;
    for (const Subtask& subtask : plan.subtasks)
      if (const auto* spec = std::get_if<ReductionSpec>(&subtask.spec);
          spec && spec->op == ReduceOp::mean_var)
        rows.push_back(spec->outer);
    return rows;
  };
  const Plan large = fixture_plan("plan_dense_block_stats");  // 3 layers, 16-channel features
  EXPECT_EQ(reduced_channels(large), (std::vector<int64_t>{16, 16, 16}));
  EXPECT_EQ(copies(large), 1);  // the block's input only: the statistics are written in place
  const Plan small = fixture_plan("plan_cat_dense_block");  // 3 layers, 8 then 4 per feature
  EXPECT_EQ(reduced_channels(small), (std::vector<int64_t>{8, 12, 16}));
}

}  // namespace
}  // namespace stitch::plan
