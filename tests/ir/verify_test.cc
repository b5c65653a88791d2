// verify() on graphs built in code (what passes produce): each broken invariant is reported with
// the node and the problem.
#include <gtest/gtest.h>

#include "ir/ir.h"
#include "test_graphs.h"

namespace stitch::ir {
namespace {

using namespace testing;  // NOLINT: test helpers

std::string verify_error(const Graph& graph) {
  Status status = verify(graph);
  EXPECT_FALSE(status.ok()) << "verified without error";
  return status.ok() ? "" : status.error().message;
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

TEST(Verify, AcceptsValidGraphs) {
  EXPECT_TRUE(verify(tiny_graph()).ok());
  Graph empty;
  EXPECT_TRUE(verify(empty).ok());
}

TEST(Verify, DuplicateNodeIds) {
  Graph graph = tiny_graph();
  graph.nodes.push_back(graph.nodes[0]);
  EXPECT_CONTAINS(verify_error(graph), "node #1 'relu': duplicate id (also node #0)");
}

TEST(Verify, EmptyId) {
  Graph graph = tiny_graph();
  graph.nodes[0].id.clear();
  EXPECT_CONTAINS(verify_error(graph), "node #0: empty id");
}

TEST(Verify, ForwardAndDanglingReferences) {
  Graph graph = tiny_graph();
  graph.nodes[0].args[0] = Arg{node_ref(0)};
  EXPECT_CONTAINS(verify_error(graph), "does not come earlier");
  graph.nodes[0].args[0] = Arg{node_ref(5)};
  EXPECT_CONTAINS(verify_error(graph), "node #0 'relu': args[0]: refers to node #5");
  graph.nodes[0].args[0] = Arg{input_ref(1)};
  EXPECT_CONTAINS(verify_error(graph), "refers to input 1, but the graph has 1 inputs");
  graph.nodes[0].args[0] = Arg{param_ref(0)};
  EXPECT_CONTAINS(verify_error(graph), "refers to param 0, but the graph has 0 params");
  graph.nodes[0].args[0] = Arg{ArgList{Arg{int64_t{1}}, Arg{input_ref(-1)}}};
  EXPECT_CONTAINS(verify_error(graph), "args[0][1]: refers to input -1");
}

TEST(Verify, OutputIndex) {
  Graph graph = tiny_graph();
  graph.nodes.push_back(make_node("neg", Op::neg, {Arg{node_ref(0, 1)}}, {contiguous({4, 8})}));
  EXPECT_CONTAINS(
      verify_error(graph),
      "node #1 'neg': args[0]: refers to output 1 of node 'relu', which has 1 output(s)");
  graph.nodes[1].args[0] = Arg{ValueRef{ValueRef::Kind::input, 0, 2}};
  EXPECT_CONTAINS(verify_error(graph), "input reference has out = 2");
}

TEST(Verify, ShapesAndStrides) {
  Graph graph = tiny_graph();
  graph.nodes[0].outputs[0].strides = {1};
  EXPECT_CONTAINS(verify_error(graph),
                  "node #0 'relu': outputs[0]: shape has rank 2 but strides has rank 1");
  graph.nodes[0].outputs[0] = TensorType{{4, -1}, DType::float32, {1, 1}};
  EXPECT_CONTAINS(verify_error(graph), "shape[1] is negative (-1)");
  graph.nodes[0].outputs[0] = TensorType{{4, 4}, DType::float32, {-4, 1}};
  EXPECT_CONTAINS(verify_error(graph), "strides[0] is negative");
  graph.nodes[0].outputs[0] =
      TensorType{{int64_t{1} << 40, int64_t{1} << 40}, DType::float32, {1, 1}};
  EXPECT_CONTAINS(verify_error(graph), "too large");
  graph = tiny_graph();
  graph.inputs[0].type.strides.clear();
  EXPECT_CONTAINS(verify_error(graph), "inputs[0] 'x': shape has rank 2 but strides has rank 0");
}

TEST(Verify, GraphOutputs) {
  Graph graph = tiny_graph();
  graph.outputs.push_back(node_ref(3));
  EXPECT_CONTAINS(verify_error(graph),
                  "graph outputs[1]: refers to node #3, but the graph has 1 nodes");
}

TEST(Verify, ParamNames) {
  Graph graph = tiny_graph();
  graph.params.push_back({"w", ParamKind::parameter, contiguous({3})});
  graph.params.push_back({"w", ParamKind::buffer, contiguous({3})});
  EXPECT_CONTAINS(verify_error(graph), "params[1]: duplicate name 'w' (also params[0])");
  graph.params[1].name.clear();
  EXPECT_CONTAINS(verify_error(graph), "params[1]: empty name");
}

TEST(Verify, OpNames) {
  Graph graph = tiny_graph();
  graph.nodes[0].op_name = "aten.gelu.default";
  EXPECT_CONTAINS(verify_error(graph),
                  "op is aten.relu.default but op_name says 'aten.gelu.default'");
  graph.nodes[0].op = Op::opaque;
  graph.nodes[0].op_name.clear();
  EXPECT_CONTAINS(verify_error(graph), "opaque op without an op name");
}

TEST(Verify, DuplicateKwargsAndBadConstants) {
  Graph graph = tiny_graph();
  graph.nodes[0].kwargs = {{"a", Arg{}}, {"a", Arg{}}};
  EXPECT_CONTAINS(verify_error(graph), "kwargs: duplicate name 'a'");
  graph = tiny_graph();
  graph.task.constants_json = "[1]";
  EXPECT_CONTAINS(verify_error(graph), "task.constants is not a JSON object");
}

}  // namespace
}  // namespace stitch::ir
