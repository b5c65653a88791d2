// Helpers shared by the IR tests: fixture paths and a small graph built in code.
#pragma once

#include <string>

#include "ir/ir.h"

namespace stitch::ir::testing {

inline std::string fixture_path(const std::string& name) {
  return std::string(STITCH_TEST_DATA_DIR) + "/ir/data/" + name;
}

inline TensorType contiguous(std::vector<int64_t> shape, DType dtype = DType::float32) {
  TensorType type;
  type.strides = contiguous_strides(shape);
  type.shape = std::move(shape);
  type.dtype = dtype;
  return type;
}

inline ValueRef input_ref(int32_t index) {
  return {ValueRef::Kind::input, index, 0};
}
inline ValueRef param_ref(int32_t index) {
  return {ValueRef::Kind::param, index, 0};
}
inline ValueRef node_ref(int32_t index, int32_t out = 0) {
  return {ValueRef::Kind::node, index, out};
}

inline Node make_node(std::string id, Op op, std::vector<Arg> args,
                      std::vector<TensorType> outputs) {
  Node node;
  node.id = std::move(id);
  node.op = op;
  node.op_name = std::string(op_name(op));
  node.args = std::move(args);
  node.outputs = std::move(outputs);
  return node;
}

// x [4, 8] -> relu -> output; valid.
inline Graph tiny_graph() {
  Graph graph;
  graph.inputs.push_back({"x", InputKind::user, contiguous({4, 8}), "randn", ""});
  graph.nodes.push_back(make_node("relu", Op::relu, {Arg{input_ref(0)}}, {contiguous({4, 8})}));
  graph.outputs.push_back(node_ref(0));
  return graph;
}

}  // namespace stitch::ir::testing
