// Helpers for the Planner tests: a small graph builder and fixture paths.
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "plan/graph_edit.h"
#include "plan/passes.h"

namespace stitch::plan::testing {

inline std::string data_path(const std::string& name) {
  return std::string(STITCH_TEST_DATA_DIR) + "/plan/data/" + name;
}
inline std::string golden_path(const std::string& name) {
  return std::string(STITCH_TEST_DATA_DIR) + "/plan/golden/" + name;
}

inline ir::Arg ref(const ir::ValueRef& value) {
  return ir::Arg{value};
}
inline ir::Arg num(double value) {
  ir::Arg arg;
  arg.value = value;
  return arg;
}
inline ir::Arg integer(int64_t value) {
  ir::Arg arg;
  arg.value = value;
  return arg;
}
inline ir::Arg flag(bool value) {
  ir::Arg arg;
  arg.value = value;
  return arg;
}
inline ir::Arg ints(const std::vector<int64_t>& values) {
  return int_list_arg(values);
}
// A list of tensors (cat's first argument).
inline ir::Arg list(const std::vector<ir::ValueRef>& values) {
  ir::ArgList items;
  for (const ir::ValueRef& value : values)
    items.push_back(ref(value));
  return ir::Arg{std::move(items)};
}

// Builds graphs node by node; every output is contiguous.
class GraphBuilder {
 public:
  ir::ValueRef input(const std::string& name, std::vector<int64_t> shape,
                     ir::DType dtype = ir::DType::float32) {
    graph_.inputs.push_back(
        {name, ir::InputKind::user, contiguous_type(std::move(shape), dtype), "randn", ""});
    return {ir::ValueRef::Kind::input, static_cast<int32_t>(graph_.inputs.size() - 1), 0};
  }
  ir::ValueRef param(const std::string& name, std::vector<int64_t> shape) {
    graph_.params.push_back(
        {name, ir::ParamKind::parameter, contiguous_type(std::move(shape), ir::DType::float32)});
    return {ir::ValueRef::Kind::param, static_cast<int32_t>(graph_.params.size() - 1), 0};
  }
  // A node with one output per shape (all of `dtype`).
  ir::ValueRef multi(const std::string& id, ir::Op op, std::vector<ir::Arg> args,
                     std::vector<std::vector<int64_t>> shapes, ir::DType dtype = ir::DType::float32,
                     std::vector<std::pair<std::string, ir::Arg>> kwargs = {}) {
    std::vector<ir::TensorType> outputs;
    for (auto& shape : shapes)
      outputs.push_back(contiguous_type(std::move(shape), dtype));
    ir::Node node = new_node(id, op, std::move(args), std::move(outputs), ir::Node{});
    node.kwargs = std::move(kwargs);
    graph_.nodes.push_back(std::move(node));
    return {ir::ValueRef::Kind::node, static_cast<int32_t>(graph_.nodes.size() - 1), 0};
  }
  ir::ValueRef node(const std::string& id, ir::Op op, std::vector<ir::Arg> args,
                    std::vector<int64_t> shape, ir::DType dtype = ir::DType::float32) {
    return multi(id, op, std::move(args), std::vector<std::vector<int64_t>>{std::move(shape)},
                 dtype);
  }
  void output(const ir::ValueRef& value) { graph_.outputs.push_back(value); }
  ir::Graph& graph() { return graph_; }

 private:
  ir::Graph graph_;
};

inline int count_op(const ir::Graph& graph, ir::Op op) {
  int count = 0;
  for (const ir::Node& node : graph.nodes)
    count += node.op == op;
  return count;
}

}  // namespace stitch::plan::testing
