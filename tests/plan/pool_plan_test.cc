// Pools that do not tile their input plan as direct pooling kernels (PoolSpec): the params read
// from the node, the fused elementwise epilogue, the indices stored, plan.json round trips; tiling
// pools stay reductions and global average pools a mean.
#include <gtest/gtest.h>

#include "plan/plan_json.h"
#include "plan/planner.h"
#include "plan/pooling.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

const PoolSpec* only_pool(const Plan& plan) {
  const PoolSpec* found = nullptr;
  for (const Subtask& subtask : plan.subtasks)
    if (const auto* pool = std::get_if<PoolSpec>(&subtask.spec)) {
      EXPECT_EQ(found, nullptr) << "more than one pool subtask";
      found = pool;
    }
  return found;
}

TEST(PoolPlan, OverlappingMaxPoolWithIndicesAndAnEpilogue) {
  GraphBuilder b;
  auto x = b.input("x", {2, 3, 13, 11});
  // MaxPool2d(3, stride=2, padding=1, dilation=2, ceil_mode=True)
  auto pool = b.multi("pool", Op::max_pool2d_with_indices,
                      {ref(x), ints({3, 3}), ints({2, 2}), ints({1, 1}), ints({2, 2}), flag(true)},
                      {{2, 3, 6, 5}, {2, 3, 6, 5}});
  b.graph().nodes.back().outputs[1].dtype = ir::DType::int64;
  auto relu = b.node("relu", Op::relu, {ref(pool)}, {2, 3, 6, 5});
  b.output(b.node("scaled", Op::mul_tensor, {ref(relu), num(2.0)}, {2, 3, 6, 5}));
  b.output(ir::ValueRef{ir::ValueRef::Kind::node, pool.index, 1});
  auto plan = make_plan(b.graph(), {});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 1u);  // the relu and the scale are its epilogue
  const Subtask& subtask = plan->subtasks[0];
  EXPECT_EQ(subtask.kernel, "pool");
  EXPECT_EQ(subtask.id, "s00_pool_max2d_2x3x6x5");
  const PoolSpec* spec = only_pool(*plan);
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->op, PoolOp::max);
  EXPECT_EQ(spec->out, (std::vector<int64_t>{6, 5}));
  EXPECT_EQ(spec->kernel, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(spec->padding, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(spec->dilation, (std::vector<int64_t>{2, 2}));
  ASSERT_TRUE(spec->epilogue.has_value());
  EXPECT_EQ(spec->epilogue->steps.size(), 2u);
  ASSERT_EQ(spec->stores.size(), 2u);  // the indices (load 1) and the scaled result
  EXPECT_EQ(spec->stores[0].from, (Operand{Operand::Kind::load, 1, 0}));
  // One window of 3x3 per output plus two epilogue steps; the input read once.
  EXPECT_DOUBLE_EQ(subtask.flops, 2.0 * 3 * 6 * 5 * (9 + 2));
  EXPECT_DOUBLE_EQ(subtask.bytes, (2.0 * 3 * 13 * 11 + 2 * 3 * 6 * 5) * 4 + 2 * 3 * 6 * 5 * 8);
  auto parsed = parse_plan(serialize_plan(*plan));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, *plan);
}

TEST(PoolPlan, ParamsOfEveryPoolingOp) {
  GraphBuilder b;
  auto v = b.input("v", {2, 2, 7, 8, 9});
  // AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
  auto avg =
      b.node("avg", Op::avg_pool3d,
             {ref(v), ints({3, 3, 3}), ints({2, 2, 2}), ints({1, 1, 1}), flag(true), flag(false)},
             {2, 2, 4, 5, 5});
  auto x = b.input("x", {2, 3, 12, 12});
  auto divided =
      b.node("divided", Op::avg_pool2d,
             {ref(x), ints({2}), ints({1}), ints({1}), flag(false), flag(true), integer(3)},
             {2, 3, 13, 13});
  auto adaptive = b.node("adaptive", Op::adaptive_avg_pool2d, {ref(x), ints({4, 7})}, {2, 3, 4, 7});
  const ir::Graph& g = b.graph();
  const auto p3 = pool_params(g, g.nodes[avg.index]);
  ASSERT_TRUE(p3.has_value());
  EXPECT_EQ(p3->op, PoolOp::avg);
  EXPECT_EQ(p3->spatial, 3);
  EXPECT_TRUE(p3->ceil_mode);
  EXPECT_FALSE(p3->count_include_pad);
  EXPECT_EQ(p3->out, (std::vector<int64_t>{4, 5, 5}));
  const auto p2 = pool_params(g, g.nodes[divided.index]);
  ASSERT_TRUE(p2.has_value());
  EXPECT_EQ(p2->kernel, (std::vector<int64_t>{2, 2}));  // [k] means k in every dim
  EXPECT_EQ(p2->divisor, 3);
  const auto pa = pool_params(g, g.nodes[adaptive.index]);
  ASSERT_TRUE(pa.has_value());
  EXPECT_EQ(pa->op, PoolOp::adaptive_avg);
  EXPECT_TRUE(pa->kernel.empty());
  EXPECT_FALSE(pool_params(g, ir::Node{}).has_value());
}

TEST(PoolPlan, TilingPoolsStayReductionsAndGlobalAveragePoolsAMean) {
  GraphBuilder b;
  auto x = b.input("x", {2, 3, 8, 8});
  b.output(b.node("tiling", Op::avg_pool2d, {ref(x), ints({2, 2})}, {2, 3, 4, 4}));
  b.output(b.node("global", Op::adaptive_avg_pool2d, {ref(x), ints({1, 1})}, {2, 3, 1, 1}));
  auto plan = make_plan(b.graph(), {});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(only_pool(*plan), nullptr);
  for (const Subtask& subtask : plan->subtasks)
    EXPECT_EQ(subtask.kernel, "reduce") << subtask.id;
}

}  // namespace
}  // namespace stitch::plan
