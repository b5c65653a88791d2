// Recurrent layers in the Planner (issue 16 item 2): the arguments read into a RecurrentSpec,
// the refusals by reason (training-mode dropout, LSTM projections, non-float32 data, unbatched
// input), the plan (one cudnn_rnn subtask, stores of y and only the used states, track math),
// its plan.json round trip, the plan-check invariants, the contiguity the pass "materialize"
// ensures and the cost model's per-step floor.
#include <gtest/gtest.h>

#include <optional>

#include "plan/cost_model.h"
#include "plan/kernel_choice.h"
#include "plan/passes.h"
#include "plan/plan_check.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "plan/recurrent.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

struct Rnn {
  Op op = Op::lstm_input;
  int64_t seq = 5, batch = 2, input = 3, hidden = 4, layers = 2;
  bool biases = true, bidirectional = false, batch_first = false, train = true;
  double dropout = 0;
  int64_t proj = 0;  // LSTM proj_size: h0 and w_hh use it
  ir::DType dtype = ir::DType::float32;
};

int64_t gates(Op op) {
  return op == Op::lstm_input ? 4 : op == Op::gru_input ? 3 : 1;
}

// The recurrent node of `r` over input "x" or `x_value` (and states h0 / c0 as inputs), params in
// PyTorch's order; returns the node's value 0 (its outputs: y, h_n[, c_n]).
ir::ValueRef add_rnn(GraphBuilder& b, const Rnn& r,
                     std::optional<ir::ValueRef> x_value = std::nullopt) {
  const int64_t dirs = r.bidirectional ? 2 : 1;
  const int64_t out_hidden = r.proj > 0 ? r.proj : r.hidden;
  std::vector<int64_t> x_shape = r.batch_first ? std::vector<int64_t>{r.batch, r.seq, r.input}
                                               : std::vector<int64_t>{r.seq, r.batch, r.input};
  ir::ValueRef x = x_value ? *x_value : b.input("x", x_shape, r.dtype);
  ir::ValueRef h0 = b.input("h0", {r.layers * dirs, r.batch, out_hidden});
  ir::Arg hx = ref(h0);
  if (r.op == Op::lstm_input)
    hx = ir::Arg{ir::ArgList{ref(h0), ref(b.input("c0", {r.layers * dirs, r.batch, r.hidden}))}};
  ir::ArgList params;
  for (int64_t layer = 0; layer < r.layers; ++layer)
    for (int64_t dir = 0; dir < dirs; ++dir) {
      const std::string tag = std::to_string(layer) + "_" + std::to_string(dir);
      const int64_t in = layer == 0 ? r.input : dirs * out_hidden;
      params.push_back(ref(b.param("w_ih" + tag, {gates(r.op) * r.hidden, in})));
      params.push_back(ref(b.param("w_hh" + tag, {gates(r.op) * r.hidden, out_hidden})));
      if (r.biases) {
        params.push_back(ref(b.param("b_ih" + tag, {gates(r.op) * r.hidden})));
        params.push_back(ref(b.param("b_hh" + tag, {gates(r.op) * r.hidden})));
      }
    }
  std::vector<int64_t> y = r.batch_first ? std::vector<int64_t>{r.batch, r.seq, dirs * out_hidden}
                                         : std::vector<int64_t>{r.seq, r.batch, dirs * out_hidden};
  std::vector<std::vector<int64_t>> outputs{y, {r.layers * dirs, r.batch, out_hidden}};
  if (r.op == Op::lstm_input) outputs.push_back({r.layers * dirs, r.batch, r.hidden});
  ir::Arg dropout;
  dropout.value = r.dropout;
  return b.multi("rnn", r.op,
                 {ref(x), hx, ir::Arg{params}, flag(r.biases), integer(r.layers), dropout,
                  flag(r.train), flag(r.bidirectional), flag(r.batch_first)},
                 outputs, r.dtype);
}

ir::ValueRef output(const ir::ValueRef& rnn, int out) {
  return ir::ValueRef{ir::ValueRef::Kind::node, rnn.index, out};
}

Result<Plan> plan_graph(GraphBuilder& b, TensorMath math = TensorMath::fp32) {
  PlanOptions options;
  options.tensor_math = math;
  return make_plan(b.graph(), options);
}

const RecurrentSpec* find_recurrent(const Plan& plan, const Subtask** subtask = nullptr) {
  for (const Subtask& s : plan.subtasks)
    if (const auto* spec = std::get_if<RecurrentSpec>(&s.spec)) {
      if (subtask) *subtask = &s;
      return spec;
    }
  return nullptr;
}

std::string refusal(const Rnn& r) {
  GraphBuilder b;
  add_rnn(b, r);
  return uncovered_reason(b.graph(), b.graph().nodes.back());
}

TEST(RecurrentGeometry, ReadsSizesAndFlags) {
  GraphBuilder b;
  Rnn r;
  r.op = Op::gru_input, r.batch_first = true, r.bidirectional = true, r.biases = false;
  add_rnn(b, r);
  auto spec = recurrent_geometry(b.graph(), b.graph().nodes.back());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->cell, RecurrentCell::gru);
  EXPECT_EQ(spec->seq_len, 5);
  EXPECT_EQ(spec->batch, 2);
  EXPECT_EQ(spec->input_size, 3);
  EXPECT_EQ(spec->hidden_size, 4);
  EXPECT_EQ(spec->layers, 2);
  EXPECT_TRUE(spec->bidirectional && spec->batch_first && !spec->has_biases);
  EXPECT_EQ(recurrent_param_count(*spec), 2 * 2 * 2);
  // Layer 1's w_ih reads both directions of layer 0: [3 * 4, 2 * 4].
  EXPECT_EQ(recurrent_param_elements(*spec, 4), 12 * 8);
  EXPECT_EQ(uncovered_reason(b.graph(), b.graph().nodes.back()), "");
}

TEST(RecurrentCoverage, RefusesWhatCudnnInferenceCannotRun) {
  Rnn dropout;
  dropout.dropout = 0.5;
  EXPECT_NE(refusal(dropout).find("dropout 0.5 in training mode"), std::string::npos)
      << refusal(dropout);
  dropout.train = false;  // eval mode: dropout is off, the layer is covered
  EXPECT_EQ(refusal(dropout), "");

  Rnn projected;
  projected.proj = 3;
  EXPECT_NE(refusal(projected).find("projections"), std::string::npos) << refusal(projected);

  Rnn half;
  half.dtype = ir::DType::float16;
  EXPECT_NE(refusal(half).find("float16"), std::string::npos) << refusal(half);

  GraphBuilder unbatched;
  auto x = unbatched.input("x", {5, 3});
  auto h0 = unbatched.input("h0", {1, 4});
  unbatched.multi("rnn", Op::rnn_tanh_input,
                  {ref(x), ref(h0), ir::Arg{ir::ArgList{}}, flag(false), integer(1), num(0),
                   flag(false), flag(false), flag(false)},
                  {{5, 4}, {1, 4}});
  const std::string reason = uncovered_reason(unbatched.graph(), unbatched.graph().nodes.back());
  EXPECT_NE(reason.find("unbatched"), std::string::npos) << reason;
}

TEST(RecurrentPlan, OneCudnnSubtaskStoringYAndTheUsedStates) {
  GraphBuilder b;
  Rnn r;
  r.bidirectional = true;
  auto rnn = add_rnn(b, r);
  b.output(b.node("t", Op::tanh, {ref(output(rnn, 2))}, {4, 2, 4}));  // c_n only
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const Subtask* subtask = nullptr;
  const RecurrentSpec* spec = find_recurrent(*plan, &subtask);
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(subtask->kernel, "cudnn_rnn");
  EXPECT_EQ(subtask_tensor_math(*subtask), TensorMath::fp32);
  EXPECT_EQ(subtask->id, "s00_lstm_bidirectional_2x4_5x2x3");
  ASSERT_EQ(spec->stores.size(), 2u);  // y (cuDNN writes it) and c_n; h_n unused
  EXPECT_EQ(spec->stores[0].from.index, 0);
  EXPECT_EQ(spec->stores[1].from.index, 2);
  ASSERT_TRUE(spec->c0.has_value());
  EXPECT_EQ(spec->params.size(), 16u);
  EXPECT_TRUE(check_plan(*plan).ok());

  const std::string text = serialize_plan(*plan);
  auto parsed = parse_plan(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(*parsed == *plan);
  EXPECT_EQ(serialize_plan(*parsed), text);
}

TEST(RecurrentPlan, TensorCoreTracksRunTf32) {
  for (TensorMath math : {TensorMath::tf32, TensorMath::bf16}) {
    GraphBuilder b;
    Rnn r;
    r.op = Op::rnn_relu_input;
    b.output(add_rnn(b, r));
    auto plan = plan_graph(b, math);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const Subtask* subtask = nullptr;
    ASSERT_NE(find_recurrent(*plan, &subtask), nullptr);
    EXPECT_EQ(subtask_tensor_math(*subtask), TensorMath::tf32);
  }
}

TEST(RecurrentPlan, NonContiguousInputIsClonedFirst) {
  GraphBuilder b;
  Rnn r;
  r.op = Op::gru_input;
  // x arrives batch-major and is transposed into [seq, batch, input] by a view.
  auto x_view =
      b.node("x_t", Op::permute, {ref(b.input("x", {2, 5, 3})), ints({1, 0, 2})}, {5, 2, 3});
  b.output(add_rnn(b, r, x_view));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const RecurrentSpec* spec = find_recurrent(*plan);
  ASSERT_NE(spec, nullptr);
  EXPECT_TRUE(spec->x.is_contiguous());
  EXPECT_EQ(spec->x.base.kind, ir::ValueRef::Kind::node);  // the clone, not the input
  EXPECT_TRUE(std::holds_alternative<CopySpec>(plan->subtasks.at(0).spec));
}

TEST(RecurrentPlan, MisalignedInputIsClonedFirst) {
  GraphBuilder b;
  Rnn r;
  r.op = Op::rnn_tanh_input;
  // x[1:] of a [6, 2, 3] input: contiguous, but 6 floats (24 bytes) into its buffer.
  auto x_slice =
      b.node("x_1", Op::slice_tensor,
             {ref(b.input("x", {6, 2, 3})), integer(0), integer(1), integer(6)}, {5, 2, 3});
  b.output(add_rnn(b, r, x_slice));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const RecurrentSpec* spec = find_recurrent(*plan);
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(spec->x.offset, 0);
  EXPECT_EQ(spec->x.base.kind, ir::ValueRef::Kind::node);  // the clone, not the input
}

TEST(RecurrentPlanCheck, RejectsBrokenSpecs) {
  GraphBuilder b;
  Rnn r;
  b.output(output(add_rnn(b, r), 1));  // h_n
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(check_plan(*plan).ok());
  auto broken = [&](auto&& edit) {
    Plan copy = *plan;
    for (Subtask& s : copy.subtasks)
      if (auto* spec = std::get_if<RecurrentSpec>(&s.spec)) edit(*spec);
    return check_plan(copy);
  };
  EXPECT_FALSE(broken([](RecurrentSpec& s) { s.c0.reset(); }).ok());
  EXPECT_FALSE(broken([](RecurrentSpec& s) { s.params.pop_back(); }).ok());
  EXPECT_FALSE(broken([](RecurrentSpec& s) { s.hidden_size += 1; }).ok());
  EXPECT_FALSE(broken([](RecurrentSpec& s) { s.x.strides = {1, 5, 10}; }).ok());
  EXPECT_FALSE(broken([](RecurrentSpec& s) { std::swap(s.stores[0], s.stores[1]); }).ok());
  EXPECT_FALSE(broken([](RecurrentSpec& s) { s.stores[1].from.index = 2; }).ok());
}

TEST(RecurrentCost, FloorIsAtLeastTheSerialSteps) {
  GraphBuilder b;
  Rnn r;
  r.op = Op::rnn_tanh_input, r.layers = 1, r.biases = false;
  b.output(add_rnn(b, r));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const Subtask* subtask = nullptr;
  const RecurrentSpec* spec = find_recurrent(*plan, &subtask);
  ASSERT_NE(spec, nullptr);
  EXPECT_DOUBLE_EQ(recurrent_steps(*spec), 5.0);
  EXPECT_DOUBLE_EQ(subtask->floor_us, 5.0 * kRecurrentStepUs);
  EXPECT_EQ(subtask->bound, Bound::latency);
  // Per step and batch row: 1 gate of 4 rows, 2 * (3 + 4) products each + 8 for the gate math.
  EXPECT_DOUBLE_EQ(subtask->flops, 5.0 * 2 * 4 * (2.0 * (3 + 4) + 8));
}

}  // namespace
}  // namespace stitch::plan
