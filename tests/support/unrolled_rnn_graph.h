// A vanilla RNN written as a Python loop, as torch.export captures it: one copy of the cell per
// step (select x[t], cat with h, permute of the weight, addmm, activation), a per-step output
// Linear, the outputs stacked (cat along dim 0, then a view). Built node by node so a test can ask
// for any number of steps (KernelBench's VanillaRNNHidden has 256) without a 700 KB fixture.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "ir/ir.h"
#include "plan/graph_edit.h"

namespace stitch::testing {

struct UnrolledRnn {
  int64_t steps = 256, batch = 8, input = 1024, hidden = 256, output = 128;
  ir::Op activation = ir::Op::tanh;
  bool state_first = false;  // cat((h, x[t])) instead of cat((x[t], h))
  bool chained = true;       // false: every step reads h0 (not a recurrence)
  int odd_weight_step = -1;  // this step reads a second weight (the chain is cut there)
};

inline ir::Graph unrolled_rnn_graph(const UnrolledRnn& r) {
  using ir::Op;
  using ir::ValueRef;
  ir::Graph graph;
  graph.task.name = "unrolled_rnn";
  auto type = [](std::vector<int64_t> shape) {
    return plan::contiguous_type(std::move(shape), ir::DType::float32);
  };
  graph.inputs.push_back({"x", ir::InputKind::user, type({r.steps, r.batch, r.input}), "rand", ""});
  graph.inputs.push_back({"h0", ir::InputKind::user, type({r.batch, r.hidden}), "rand", ""});
  for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"i2h.weight", {r.hidden, r.input + r.hidden}},
           {"i2h.bias", {r.hidden}},
           {"h2o.weight", {r.output, r.hidden}},
           {"h2o.bias", {r.output}},
           {"odd.weight", {r.hidden, r.input + r.hidden}}})
    graph.params.push_back({name, ir::ParamKind::parameter, type(shape)});
  const ValueRef x{ValueRef::Kind::input, 0, 0}, h0{ValueRef::Kind::input, 1, 0};
  auto param = [](int index) { return ValueRef{ValueRef::Kind::param, index, 0}; };
  auto add = [&](std::string id, Op op, std::vector<ir::Arg> args, std::vector<int64_t> shape) {
    graph.nodes.push_back(plan::new_node(std::move(id), op, std::move(args), {type(shape)}, {}));
    return ValueRef{ValueRef::Kind::node, static_cast<int32_t>(graph.nodes.size() - 1), 0};
  };
  ValueRef h = h0;
  ir::ArgList outputs;
  for (int64_t t = 0; t < r.steps; ++t) {
    const ValueRef x_t =
        add(fmt::format("select_{}", t), Op::select_int,
            {plan::ref_arg(x), ir::Arg{int64_t{0}}, ir::Arg{t}}, {r.batch, r.input});
    const ValueRef state = r.chained ? h : h0;
    ir::ArgList pieces{plan::ref_arg(x_t), plan::ref_arg(state)};
    if (r.state_first) std::swap(pieces[0], pieces[1]);
    const ValueRef cat =
        add(fmt::format("cat_{}", t), Op::cat, {ir::Arg{std::move(pieces)}, ir::Arg{int64_t{1}}},
            {r.batch, r.input + r.hidden});
    const ValueRef w =
        add(fmt::format("permute_{}", 2 * t), Op::permute,
            {plan::ref_arg(param(t == r.odd_weight_step ? 4 : 0)), plan::int_list_arg({1, 0})},
            {r.input + r.hidden, r.hidden});
    const ValueRef product =
        add(fmt::format("addmm_{}", 2 * t), Op::addmm,
            {plan::ref_arg(param(1)), plan::ref_arg(cat), plan::ref_arg(w)}, {r.batch, r.hidden});
    h = add(fmt::format("act_{}", t), r.activation, {plan::ref_arg(product)}, {r.batch, r.hidden});
    const ValueRef w2 =
        add(fmt::format("permute_{}", 2 * t + 1), Op::permute,
            {plan::ref_arg(param(2)), plan::int_list_arg({1, 0})}, {r.hidden, r.output});
    outputs.push_back(plan::ref_arg(
        add(fmt::format("addmm_{}", 2 * t + 1), Op::addmm,
            {plan::ref_arg(param(3)), plan::ref_arg(h), plan::ref_arg(w2)}, {r.batch, r.output})));
  }
  const ValueRef stacked =
      add("cat_out", Op::cat, {ir::Arg{std::move(outputs)}, ir::Arg{int64_t{0}}},
          {r.steps * r.batch, r.output});
  graph.outputs.push_back(add(
      "view", Op::view, {plan::ref_arg(stacked), plan::int_list_arg({r.steps, r.batch, r.output})},
      {r.steps, r.batch, r.output}));
  return graph;
}

}  // namespace stitch::testing
