// The graph passes on small hand-built graphs: shapes, dead-code, coverage, views, materialize.
#include <gtest/gtest.h>

#include "plan/access.h"
#include "plan/graph_edit.h"
#include "plan/kernel_layouts.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

TEST(Shapes, AcceptsConsistentGraph) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto w = b.param("w", {8});
  auto mul = b.node("mul", Op::mul_tensor, {ref(x), ref(w)}, {4, 8});
  auto gt = b.node("gt", Op::gt_scalar, {ref(mul), num(0.0)}, {4, 8}, ir::DType::boolean);
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(mul), ints({1}), flag(true)}, {4, 1});
  b.node("amax", Op::argmax, {ref(sum), integer(0)}, {1}, ir::DType::int64);
  b.output(gt);
  ASSERT_TRUE(ir::verify(b.graph()).ok());
  EXPECT_TRUE(check_shapes(b.graph(), {}).ok());
}

TEST(Shapes, MismatchNamesNode) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto y = b.input("y", {8});
  b.output(b.node("add", Op::add_tensor, {ref(x), ref(y)}, {4, 16}));
  auto result = check_shapes(b.graph(), {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("node 'add' (aten.add.Tensor)"), std::string::npos);
  EXPECT_NE(result.error().message.find("[4, 8]"), std::string::npos);
}

TEST(Shapes, DtypePromotionAndComparisons) {
  GraphBuilder b;
  auto i = b.input("i", {4}, ir::DType::int64);
  // int tensor + float scalar -> float32; int / int -> float32
  auto added = b.node("add", Op::add_tensor, {ref(i), num(0.5)}, {4});
  b.node("div", Op::div_tensor, {ref(i), ref(i)}, {4});
  b.output(added);
  EXPECT_TRUE(check_shapes(b.graph(), {}).ok());
  b.node("wrong", Op::mul_tensor, {ref(i), integer(2)}, {4});  // int64 * int -> int64, not float
  EXPECT_FALSE(check_shapes(b.graph(), {}).ok());
}

TEST(DeadCode, RemovesUnusedAndRecordsThem) {
  GraphBuilder b;
  auto x = b.input("x", {4});
  auto used = b.node("used", Op::relu, {ref(x)}, {4});
  b.node("unused", Op::exp, {ref(x)}, {4});
  b.graph().nodes.push_back(
      new_node("check", Op::assert_tensor_metadata, {ref(x)}, {}, ir::Node{}));
  b.output(used);
  std::vector<Skipped> skipped;
  const ir::Graph result = eliminate_dead_code(b.graph(), &skipped);
  ASSERT_EQ(result.nodes.size(), 1u);
  EXPECT_EQ(result.nodes[0].id, "used");
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].node_id, "unused");
  EXPECT_EQ(skipped[0].reason, "dead: no graph output depends on it");
  EXPECT_EQ(skipped[1].node_id, "check");
  EXPECT_TRUE(ir::verify(result).ok());
}

TEST(Coverage, RefusesOpaqueAndScans) {
  GraphBuilder b;
  auto x = b.input("x", {4});
  ir::Node odd =
      new_node("odd", Op::opaque, {ref(x)}, {contiguous_type({4}, ir::DType::float32)}, ir::Node{});
  odd.op_name = "aten.special_thing.default";
  b.graph().nodes.push_back(odd);
  EXPECT_EQ(uncovered_reason(b.graph(), b.graph().nodes[0]),
            "special_thing is not covered by the built-in Coder yet");
  ir::Node scan = new_node("c", Op::cumsum, {ref(x), integer(0)},
                           {contiguous_type({4}, ir::DType::float32)}, ir::Node{});
  EXPECT_EQ(uncovered_reason(b.graph(), scan), "");
  ir::Node wide_scan = new_node("c", Op::cumsum, {ref(x), integer(0)},
                                {contiguous_type({4}, ir::DType::int64)}, ir::Node{});
  EXPECT_EQ(uncovered_reason(b.graph(), wide_scan),
            "scan (cumsum) with int64 results is not covered by the built-in Coder yet (it "
            "accumulates in float32)");
  ir::Node bad_dim = new_node("c", Op::cumsum, {ref(x), integer(1)},
                              {contiguous_type({4}, ir::DType::float32)}, ir::Node{});
  EXPECT_EQ(uncovered_reason(b.graph(), bad_dim),
            "scan (cumsum) with a dim out of range is not covered");
  ir::Node relu =
      new_node("r", Op::relu, {ref(x)}, {contiguous_type({4}, ir::DType::float32)}, ir::Node{});
  EXPECT_EQ(uncovered_reason(b.graph(), relu), "");
}

// torch.gather (a per-element index, cross-entropy's target logits) is a gather where its index
// has the input's sizes outside the dim; a smaller index is refused, saying why.
TEST(Coverage, TorchGatherWithAnIndexOfTheInputsSizes) {
  GraphBuilder b;
  auto x = b.input("x", {8, 10});
  auto index = b.input("index", {8, 1}, ir::DType::int64);
  const auto gather = [&](const ir::ValueRef& idx, std::vector<int64_t> shape) {
    return new_node("g", Op::gather, {ref(x), integer(1), ref(idx)},
                    {contiguous_type(shape, ir::DType::float32)}, ir::Node{});
  };
  const ir::Node targets = gather(index, {8, 1});
  EXPECT_EQ(uncovered_reason(b.graph(), targets), "");
  const auto geometry = gather_geometry(b.graph(), targets);
  ASSERT_TRUE(geometry.has_value());
  EXPECT_TRUE(geometry->per_element);
  EXPECT_EQ(geometry->dim, 1);
  EXPECT_EQ(geometry->outer, 8);
  EXPECT_EQ(geometry->size, 10);
  EXPECT_EQ(geometry->count, 1);
  EXPECT_EQ(geometry->inner, 1);
  auto few_rows = b.input("few_rows", {4, 1}, ir::DType::int64);
  EXPECT_EQ(uncovered_reason(b.graph(), gather(few_rows, {4, 1})),
            "gather whose integer index differs from its input's sizes outside the dim is not "
            "covered by the built-in Coder yet");
}

TEST(Views, FoldsChainsIntoOneAccess) {
  GraphBuilder b;
  auto w = b.param("w", {8, 4});
  auto t = b.node("t", Op::permute, {ref(w), ints({1, 0})}, {4, 8});
  auto s = b.node("s", Op::slice_tensor, {ref(t), integer(1), integer(2), integer(6)}, {4, 4});
  auto u = b.node("u", Op::unsqueeze, {ref(s), integer(0)}, {1, 4, 4});
  auto e = b.node("e", Op::expand, {ref(u), ints({3, -1, -1})}, {3, 4, 4});
  b.output(b.node("r", Op::relu, {ref(e)}, {3, 4, 4}));
  auto values = fold_views(b.graph());
  ASSERT_TRUE(values.ok()) << values.error().message;
  const Access& access = values->at(value_key(e));
  EXPECT_EQ(access.base, w);
  EXPECT_EQ(access.offset, 8);  // rows 2.. of w, i.e. element 2 * 4
  EXPECT_EQ(access.shape, (std::vector<int64_t>{3, 4, 4}));
  EXPECT_EQ(access.strides, (std::vector<int64_t>{0, 1, 4}));
  // A non-view node output is a fresh contiguous buffer of its own.
  EXPECT_EQ(values->at(value_key(ir::ValueRef{ir::ValueRef::Kind::node, 4, 0})).base.index, 4);
}

TEST(Views, ReshapeOfTransposedIsAnErrorUntilMaterialized) {
  GraphBuilder b;
  auto x = b.input("x", {4, 3});
  auto t = b.node("t", Op::permute, {ref(x), ints({1, 0})}, {3, 4});
  auto flat = b.node("flat", Op::view, {ref(t), ints({-1})}, {12});
  b.output(b.node("r", Op::relu, {ref(flat)}, {12}));
  EXPECT_FALSE(fold_views(b.graph()).ok());
  auto materialized = materialize_layouts(b.graph(), {});
  ASSERT_TRUE(materialized.ok()) << materialized.error().message;
  ASSERT_TRUE(ir::verify(*materialized).ok());
  EXPECT_EQ(count_op(*materialized, Op::clone), 1);
  EXPECT_EQ(materialized->nodes[1].id, "flat_input_contiguous");
  EXPECT_TRUE(fold_views(*materialized).ok());
}

TEST(Materialize, OutputsGetTheirOwnBuffers) {
  GraphBuilder b;
  auto x = b.input("x", {4, 6});
  auto y = b.node("y", Op::relu, {ref(x)}, {4, 6});
  auto flat = b.node("flat", Op::view, {ref(y), ints({24})}, {24});  // full view: bound
  auto half =
      b.node("half", Op::slice_tensor, {ref(y), integer(1), integer(0), integer(3)}, {4, 3});
  b.output(flat);
  b.output(half);  // a strided window of y: copied
  b.output(x);     // an input: copied
  auto materialized = materialize_layouts(b.graph(), {});
  ASSERT_TRUE(materialized.ok());
  const ir::Graph& g = *materialized;
  EXPECT_EQ(g.nodes[g.outputs[0].index].id, "flat");
  EXPECT_EQ(g.nodes[g.outputs[1].index].id, "output1_copy");
  EXPECT_EQ(g.nodes[g.outputs[2].index].id, "output2_copy");
  EXPECT_EQ(count_op(g, Op::clone), 2);
}

TEST(Materialize, GemmOperandWithoutUnitStrideIsCopied) {
  GraphBuilder b;
  auto a = b.input("a", {8, 16});
  auto w = b.input("w", {16, 32});
  auto strided = b.node("strided", Op::slice_tensor,
                        {ref(w), integer(1), integer(0), integer(32), integer(2)}, {16, 16});
  b.output(b.node("mm", Op::mm, {ref(a), ref(strided)}, {8, 16}));
  auto materialized = materialize_layouts(b.graph(), {});
  ASSERT_TRUE(materialized.ok());
  EXPECT_EQ(count_op(*materialized, Op::clone), 1);
  EXPECT_EQ(materialized->nodes[1].id, "mm_b_contiguous");
}

}  // namespace
}  // namespace stitch::plan
