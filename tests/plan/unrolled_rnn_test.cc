// Pass "recurrences" (pass_unrolled_rnn.cc): a Python-loop RNN cell captured unrolled becomes one
// recurrent layer and its stacked per-step output Linear one GEMM; variants of the cell (state
// first in the cat, ReLU) map onto the layer's arguments; loops that are not a recurrence, and the
// steps after one that differs, are left as they are, and so is an output map that is not
// row-wise. The captured own tasks (tests/tasks/plan_rnn_loop_*.py) are covered by the plan
// goldens.
#include <gtest/gtest.h>

#include "plan/planner.h"
#include "plan/recurrent.h"
#include "plan_test_graphs.h"
#include "support/unrolled_rnn_graph.h"

namespace stitch::plan {
namespace {

using ir::Op;
using stitch::testing::unrolled_rnn_graph;
using stitch::testing::UnrolledRnn;

UnrolledRnn small_rnn() {
  UnrolledRnn r;
  r.steps = 6;
  r.batch = 3;
  r.input = 5;
  r.hidden = 4;
  r.output = 2;
  return r;
}

const ir::Node* find_op(const ir::Graph& graph, Op op) {
  for (const ir::Node& node : graph.nodes)
    if (node.op == op) return &node;
  return nullptr;
}

// The slice of the weight's rows a recurrent parameter (a permute of a slice) reads: its start.
int64_t weight_rows_start(const ir::Graph& graph, const ir::Arg& param) {
  const ir::Node& permute = graph.nodes[param.ref()->index];
  EXPECT_EQ(permute.op, Op::permute);
  const ir::Node& slice = graph.nodes[permute.args[0].ref()->index];
  EXPECT_EQ(slice.op, Op::slice_tensor);
  return slice.args[2].as_int().value_or(-1);
}

TEST(UnrolledRnnTest, ElmanLoopBecomesOneLayerAndOneOutputGemm) {
  const UnrolledRnn r = small_rnn();
  auto folded = fold_unrolled_recurrences(unrolled_rnn_graph(r));
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  ASSERT_TRUE(ir::verify(*folded).ok());
  EXPECT_EQ(testing::count_op(*folded, Op::rnn_tanh_input), 1);
  EXPECT_EQ(testing::count_op(*folded, Op::cat), 0);
  // One GEMM over all steps' states (the h2o Linear), nothing per step.
  ASSERT_EQ(testing::count_op(*folded, Op::addmm), 1);
  EXPECT_EQ(find_op(*folded, Op::addmm)->outputs[0].shape,
            (std::vector<int64_t>{r.steps * r.batch, r.output}));
  const ir::Node* layer = find_op(*folded, Op::rnn_tanh_input);
  auto spec = recurrent_geometry(*folded, *layer);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->seq_len, r.steps);
  EXPECT_EQ(spec->batch, r.batch);
  EXPECT_EQ(spec->input_size, r.input);
  EXPECT_EQ(spec->hidden_size, r.hidden);
  EXPECT_TRUE(spec->has_biases);
  EXPECT_FALSE(spec->batch_first);
  const ir::ArgList& params = *layer->args[2].list();
  EXPECT_EQ(weight_rows_start(*folded, params[0]), 0);            // x rows first in the cat
  EXPECT_EQ(weight_rows_start(*folded, params[1]), r.input);      // then h rows
  EXPECT_EQ(folded->nodes[params[3].ref()->index].op, Op::full);  // b_hh = 0
  // The graph output is the GEMM's result, viewed as the stack.
  EXPECT_EQ(folded->type_of(folded->outputs[0]).shape,
            (std::vector<int64_t>{r.steps, r.batch, r.output}));
}

TEST(UnrolledRnnTest, StateFirstCatAndReluMapOntoTheLayer) {
  UnrolledRnn r = small_rnn();
  r.state_first = true;
  r.activation = Op::relu;
  auto folded = fold_unrolled_recurrences(unrolled_rnn_graph(r));
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  const ir::Node* layer = find_op(*folded, Op::rnn_relu_input);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(testing::count_op(*folded, Op::rnn_tanh_input), 0);
  const ir::ArgList& params = *layer->args[2].list();
  EXPECT_EQ(weight_rows_start(*folded, params[0]), r.hidden);  // x rows after h's
  EXPECT_EQ(weight_rows_start(*folded, params[1]), 0);
}

TEST(UnrolledRnnTest, LoopThatIsNotARecurrenceIsUnchanged) {
  UnrolledRnn r = small_rnn();
  r.chained = false;  // every step reads h0
  const ir::Graph graph = unrolled_rnn_graph(r);
  auto folded = fold_unrolled_recurrences(graph);
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  EXPECT_EQ(*folded, graph);
}

TEST(UnrolledRnnTest, ChainIsCutAtAStepThatDiffers) {
  UnrolledRnn r = small_rnn();
  r.odd_weight_step = 3;  // steps 0-2 are one recurrence; 3 reads another weight
  auto folded = fold_unrolled_recurrences(unrolled_rnn_graph(r));
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  ASSERT_TRUE(ir::verify(*folded).ok());
  const ir::Node* layer = find_op(*folded, Op::rnn_tanh_input);
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->outputs[0].shape, (std::vector<int64_t>{3, r.batch, r.hidden}));
  // x[0:3] feeds the layer; steps 3-5 stay (their cats) and the stack stays a cat of 6 pieces.
  EXPECT_EQ(folded->nodes[layer->args[0].ref()->index].op, Op::slice_tensor);
  EXPECT_EQ(testing::count_op(*folded, Op::cat), 4);
  EXPECT_EQ(testing::count_op(*folded, Op::addmm), 3 + 6);
}

TEST(UnrolledRnnTest, OutputMapWithABiasPerRowStaysPerStep) {
  const UnrolledRnn r = small_rnn();
  ir::Graph graph = unrolled_rnn_graph(r);
  // h2o's bias [output] becomes a [batch, output] param: one row per batch element, which does not
  // broadcast over the rows of all steps.
  graph.params[3].type = contiguous_type({r.batch, r.output}, ir::DType::float32);
  auto folded = fold_unrolled_recurrences(graph);
  ASSERT_TRUE(folded.ok()) << folded.error().message;
  ASSERT_TRUE(ir::verify(*folded).ok());
  EXPECT_EQ(testing::count_op(*folded, Op::rnn_tanh_input), 1);
  EXPECT_EQ(testing::count_op(*folded, Op::addmm), r.steps);  // the h2o of each step
  EXPECT_EQ(testing::count_op(*folded, Op::cat), 1);          // the stack
}

TEST(UnrolledRnnTest, TwoHundredFiftySixStepsPlanAsAHandfulOfSubtasks) {
  auto plan = make_plan(unrolled_rnn_graph(UnrolledRnn{}), PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_LE(plan->subtasks.size(), 6u);  // 1280 before the pass (768 of them copies)
  int recurrent = 0;
  for (const Subtask& subtask : plan->subtasks)
    recurrent += subtask.kernel == "cudnn_rnn";
  EXPECT_EQ(recurrent, 1);
}

}  // namespace
}  // namespace stitch::plan
