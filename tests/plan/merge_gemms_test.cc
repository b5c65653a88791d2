// Pass "merge-gemms" (pass_merge_gemms.cc): pointwise convolutions of one input whose results only
// elementwise ops read become one GEMM over their concatenated weights (at init), each result a
// channel slice of the product; the others stay GEMMs of their own.
#include <gtest/gtest.h>

#include "plan/passes.h"
#include "plan/plan_check.h"
#include "plan/planner.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

constexpr int64_t kBatch = 2, kChannels = 32, kSize = 8;

// A 1x1 convolution of x with a bias, `rows` output channels.
ir::ValueRef pointwise(GraphBuilder& b, const std::string& id, ir::ValueRef x, int64_t rows,
                       bool with_bias = true) {
  auto w = b.param(id + "_w", {rows, kChannels, 1, 1});
  std::optional<ir::ValueRef> bias;
  if (with_bias) bias = b.param(id + "_b", {rows});
  return b.node(id, Op::convolution,
                {ref(x), ref(w), bias ? ref(*bias) : ir::Arg{}, ints({1, 1}), ints({0, 0}),
                 ints({1, 1}), flag(false), ints({0, 0}), integer(1)},
                {kBatch, rows, kSize, kSize});
}

std::vector<std::vector<int64_t>> gemm_shapes(const ir::Graph& graph) {
  std::vector<std::vector<int64_t>> shapes;
  for (const ir::Node& node : graph.nodes)
    if (node.op == Op::bmm) shapes.push_back(node.outputs[0].shape);
  return shapes;
}

Plan plan_on(GraphBuilder& b, TensorMath math) {
  PlanOptions options;
  options.tensor_math = math;
  auto plan = make_plan(b.graph(), options);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  if (!plan.ok()) return {};
  EXPECT_TRUE(check_plan(*plan).ok());
  return std::move(*plan);
}

// The inception module's shape: three 1x1 convolutions of the graph input, each bias add then read
// by its own op, become one GEMM of 48 + 24 + 8 rows; its weights are concatenated at init.
TEST(MergeGemms, PointwiseConvolutionsOfOneInputBecomeOneGemm) {
  for (const TensorMath math : {TensorMath::fp32, TensorMath::tf32}) {
    GraphBuilder b;
    auto x = b.input("x", {kBatch, kChannels, kSize, kSize});
    b.output(b.node("r1", Op::relu, {ref(pointwise(b, "c1", x, 48))}, {kBatch, 48, kSize, kSize}));
    b.output(b.node("r2", Op::tanh, {ref(pointwise(b, "c2", x, 24))}, {kBatch, 24, kSize, kSize}));
    b.output(pointwise(b, "c3", x, 8));
    const Plan plan = plan_on(b, math);
    EXPECT_EQ(gemm_shapes(plan.graph),
              (std::vector<std::vector<int64_t>>{{kBatch, 80, kSize * kSize}}));
    int matmuls = 0, init_copies = 0;
    for (const Subtask& subtask : plan.subtasks) {
      matmuls += std::holds_alternative<MatmulSpec>(subtask.spec);
      init_copies += subtask.at_init;
    }
    EXPECT_EQ(matmuls, 1);
    EXPECT_GE(init_copies, 1);  // the weights' concatenation
    // The second convolution's result is rows 48..71 of each image's product.
    bool found = false;
    for (const ir::Node& node : plan.graph.nodes)
      if (node.op == Op::slice_tensor && node.args[2].as_int() == 48) {
        const Access& slice = plan.values.at(node.id);
        EXPECT_EQ(slice.offset, 48 * kSize * kSize);
        EXPECT_EQ(slice.strides.at(0), 80 * kSize * kSize);
        found = true;
      }
    EXPECT_TRUE(found);
  }
}

// A GEMM whose result a convolution or another GEMM reads keeps its own product (a slice would be
// copied for it); GEMMs of different inputs, or of one input viewed differently, are not merged.
TEST(MergeGemms, OnlySiblingsReadByElementwiseOpsMerge) {
  GraphBuilder b;
  auto x = b.input("x", {kBatch, kChannels, kSize, kSize});
  auto y = b.input("y", {kBatch, kChannels, kSize, kSize});
  auto reduced = pointwise(b, "reduce", x, 16, /*with_bias=*/false);  // read by a 3x3 conv
  auto w3 = b.param("w3", {4, 16, 3, 3});
  b.output(b.node("c3", Op::convolution,
                  {ref(reduced), ref(w3), ir::Arg{}, ints({1, 1}), ints({1, 1}), ints({1, 1}),
                   flag(false), ints({0, 0}), integer(1)},
                  {kBatch, 4, kSize, kSize}));
  b.output(b.node("a", Op::relu, {ref(pointwise(b, "a_conv", x, 8))}, {kBatch, 8, kSize, kSize}));
  b.output(b.node("b", Op::relu, {ref(pointwise(b, "b_conv", y, 8))}, {kBatch, 8, kSize, kSize}));
  const Plan plan = plan_on(b, TensorMath::fp32);
  EXPECT_EQ(gemm_shapes(plan.graph).size(), 3u);
  EXPECT_EQ(count_op(plan.graph, Op::slice_tensor), 0);
}

// The pass on its own: a graph without siblings comes back as it was.
TEST(MergeGemms, LeavesOtherGraphsUnchanged) {
  GraphBuilder b;
  auto x = b.input("x", {4, 6});
  b.output(b.node("r", Op::relu, {ref(x)}, {4, 6}));
  EXPECT_EQ(merge_sibling_gemms(b.graph()), b.graph());
}

}  // namespace
}  // namespace stitch::plan
