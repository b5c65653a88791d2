// A convolution's epilogue folded into the project's convolution kernels (plan/conv_epilogue.h):
// the bias and activation as the kernel epilogue, the rest as the output transform, what stays
// in the epilogue pass, a reduction over the channels into the direct kernel, and every case that
// must not fold.
#include <algorithm>

#include <gtest/gtest.h>

#include "plan/conv_epilogue.h"
#include "plan/conv_geometry.h"
#include "plan/cost_model.h"
#include "plan/plan_check.h"
#include "plan/planner.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

const std::vector<int64_t> kOut = {2, 8, 6, 6};

// x [2, 4, 6, 6] -> conv 3x3 (padding 1, bias unless `with_bias` is false) -> [2, 8, 6, 6].
ir::ValueRef conv(GraphBuilder& b, bool with_bias = true) {
  auto x = b.input("x", {2, 4, 6, 6});
  auto w = b.param("w", {8, 4, 3, 3});
  ir::Arg bias = with_bias ? ref(b.param("bias", {8})) : ir::Arg{};
  return b.node("c", Op::convolution,
                {ref(x), ref(w), bias, ints({1, 1}), ints({1, 1}), ints({1, 1}), flag(false),
                 ints({0, 0}), integer(1)},
                kOut);
}

ir::ValueRef gelu(GraphBuilder& b, const ir::ValueRef& x, const char* approximate) {
  return b.multi("g", Op::gelu, {ref(x)}, {kOut}, ir::DType::float32,
                 {{"approximate", ir::Arg{std::string(approximate)}}});
}

Result<Plan> plan_on(GraphBuilder& b, ConvEngine engine = ConvEngine::igemm_tf32x3) {
  PlanOptions options;
  options.conv_engine = engine;
  return make_plan(b.graph(), options);
}

const Subtask& conv_subtask(const Plan& plan) {
  for (const Subtask& subtask : plan.subtasks)
    if (std::holds_alternative<ConvSpec>(subtask.spec)) return subtask;
  ADD_FAILURE() << "no convolution subtask";
  return plan.subtasks.at(0);
}

const ConvSpec& conv_of(const Plan& plan) {
  return std::get<ConvSpec>(conv_subtask(plan).spec);
}

// conv + bias + ReLU, VGG's layer: the whole chain in the kernel, no pass, no raw buffer.
TEST(ConvEpilogue, BiasAndReluFoldIntoTheKernel) {
  for (ConvEngine engine : {ConvEngine::igemm_tf32x3, ConvEngine::direct}) {
    GraphBuilder b;
    b.output(b.node("r", Op::relu, {ref(conv(b))}, kOut));
    auto plan = plan_on(b, engine);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const ConvSpec& spec = conv_of(*plan);
    EXPECT_EQ(spec.kernel_epilogue, "bias_relu");
    ASSERT_TRUE(spec.bias.has_value());
    EXPECT_EQ(plan->graph.name_of(spec.bias->base), "bias");
    EXPECT_EQ(spec.bias->shape, std::vector<int64_t>{8});
    EXPECT_EQ(spec.bias->strides, std::vector<int64_t>{1});
    EXPECT_FALSE(spec.epilogue.has_value());
    ASSERT_EQ(spec.stores.size(), 1u);
    EXPECT_EQ(plan->graph.name_of(spec.stores[0].value), "r");
    EXPECT_EQ(conv_subtask(*plan).tunables.count("vector_width"), 0u);  // no pass to launch
    // Only the output's buffer: the raw result is never stored.
    ASSERT_EQ(plan->buffers.size(), 1u);
    EXPECT_EQ(plan->buffers[0].value, "r");
  }
}

// cuDNN writes the raw result: the chain stays in the pass.
TEST(ConvEpilogue, CudnnKeepsTheEpiloguePass) {
  GraphBuilder b;
  b.output(b.node("r", Op::relu, {ref(conv(b))}, kOut));
  auto plan = plan_on(b, ConvEngine::cudnn);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = conv_of(*plan);
  EXPECT_EQ(spec.kernel_epilogue, "none");
  EXPECT_FALSE(spec.bias.has_value());
  ASSERT_TRUE(spec.epilogue.has_value());
  EXPECT_EQ(spec.epilogue->steps.size(), 2u);
}

// The kernels' GELU is the tanh form: the exact one is the output transform, after the folded
// bias.
TEST(ConvEpilogue, OnlyTheTanhGeluFolds) {
  {
    GraphBuilder b;
    b.output(gelu(b, conv(b), "tanh"));
    auto plan = plan_on(b);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(conv_of(*plan).kernel_epilogue, "bias_gelu");
    EXPECT_FALSE(conv_of(*plan).epilogue.has_value());
    EXPECT_FALSE(conv_of(*plan).output_transform.has_value());
  }
  GraphBuilder b;
  b.output(gelu(b, conv(b), "none"));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = conv_of(*plan);
  EXPECT_EQ(spec.kernel_epilogue, "bias");
  EXPECT_FALSE(spec.epilogue.has_value());
  ASSERT_TRUE(spec.output_transform.has_value());
  const Body& rest = *spec.output_transform;
  ASSERT_EQ(rest.steps.size(), 1u);
  EXPECT_EQ(plan->graph.nodes[rest.steps[0].node].op, Op::gelu);
  // Load 0 is the biased sum in the kernel's registers; the bias load is gone. The kernel stores
  // the GELU.
  ASSERT_EQ(rest.loads.size(), 1u);
  EXPECT_EQ(rest.steps[0].operands[0], (Operand{Operand::Kind::load, 0, 0}));
  ASSERT_EQ(spec.stores.size(), 1u);
  EXPECT_EQ(plan->graph.name_of(spec.stores[0].value), "g");
  EXPECT_EQ(spec.stores[0].from, (Operand{Operand::Kind::step, 0, 0}));
}

// Without a bias the activation alone folds.
TEST(ConvEpilogue, AnActivationWithoutBiasFolds) {
  GraphBuilder b;
  b.output(b.node("r", Op::relu, {ref(conv(b, false))}, kOut));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(conv_of(*plan).kernel_epilogue, "relu");
  EXPECT_FALSE(conv_of(*plan).bias.has_value());
  EXPECT_FALSE(conv_of(*plan).epilogue.has_value());
}

// A sum read twice (x · relu(x) here; a hardswish, x · relu6(x + 3) / 6, likewise) is no kernel
// epilogue's activation: the bias folds, and the rest, reading the kernel's result twice, is the
// output transform.
TEST(ConvEpilogue, ASumReadTwiceIsTheOutputTransform) {
  GraphBuilder b;
  auto c = conv(b);
  auto r = b.node("r", Op::relu, {ref(c)}, kOut);
  b.output(b.node("m", Op::mul_tensor, {ref(c), ref(r)}, kOut));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = conv_of(*plan);
  EXPECT_EQ(spec.kernel_epilogue, "bias");
  ASSERT_TRUE(spec.output_transform.has_value());
  const Body& rest = *spec.output_transform;
  ASSERT_EQ(rest.steps.size(), 2u);
  const Operand result{Operand::Kind::load, 0, 0};
  EXPECT_EQ(rest.steps[0].operands, std::vector<Operand>{result});
  EXPECT_EQ(rest.steps[1].operands[0], result);
  EXPECT_EQ(rest.steps[1].operands[1], (Operand{Operand::Kind::step, 0, 0}));
  ASSERT_EQ(spec.stores.size(), 1u);
  EXPECT_EQ(plan->graph.name_of(spec.stores[0].value), "m");
  EXPECT_EQ(spec.stores[0].from, (Operand{Operand::Kind::step, 1, 0}));
  EXPECT_EQ(rest.loads[0], plan->values.at("m"));
  // Only the output's buffer: neither the raw result nor the relu is stored.
  ASSERT_EQ(plan->buffers.size(), 1u);
  EXPECT_EQ(plan->buffers[0].value, "m");
}

// What must stay in the pass: a chain storing two values (the tanh read by another subtask too),
// a load that varies inside a plane (a product with a whole tensor), more special functions than
// the kernel takes, and cuDNN's engine.
TEST(ConvEpilogue, OnlyAWholeChainOfPlaneValuesIsTheOutputTransform) {
  {
    GraphBuilder b;
    auto t = b.node("t", Op::tanh, {ref(conv(b))}, kOut);
    b.output(t);
    b.output(b.node("e", Op::exp, {ref(t)}, kOut));
    auto plan = plan_on(b);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_FALSE(conv_of(*plan).output_transform.has_value());
  }
  {
    GraphBuilder b;
    auto other = b.input("other", kOut);
    b.output(b.node("m", Op::mul_tensor, {ref(conv(b)), ref(other)}, kOut));
    auto plan = plan_on(b);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_FALSE(conv_of(*plan).output_transform.has_value());
    ASSERT_TRUE(conv_of(*plan).epilogue.has_value());
  }
  {
    GraphBuilder b;
    auto scale = b.param("scale", {8, 1, 1});  // one value per channel: a plane value
    b.output(b.node("m", Op::mul_tensor, {ref(conv(b)), ref(scale)}, kOut));
    auto plan = plan_on(b);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_TRUE(conv_of(*plan).output_transform.has_value());
    EXPECT_EQ(conv_of(*plan).output_transform->loads.size(), 2u);
  }
  for (ConvEngine engine : {ConvEngine::igemm_tf32x3, ConvEngine::direct}) {
    // Two special functions (tanh, sigmoid): too many for the implicit GEMM's consumer warps,
    // within the direct kernel's.
    GraphBuilder b;
    auto t = b.node("t", Op::tanh, {ref(conv(b))}, kOut);
    b.output(b.node("s", Op::sigmoid, {ref(t)}, kOut));
    auto plan = plan_on(b, engine);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(conv_of(*plan).output_transform.has_value(), engine == ConvEngine::direct);
    EXPECT_EQ(conv_of(*plan).epilogue.has_value(), engine != ConvEngine::direct);
  }
  GraphBuilder b;
  b.output(b.node("t", Op::tanh, {ref(conv(b))}, kOut));
  auto plan = plan_on(b, ConvEngine::cudnn);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_FALSE(conv_of(*plan).output_transform.has_value());
  // plan_check refuses one on cuDNN.
  Plan broken = *plan;
  ConvSpec& spec = std::get<ConvSpec>(broken.subtasks.at(0).spec);
  spec.output_transform = spec.epilogue;
  spec.epilogue.reset();
  spec.stores.erase(spec.stores.begin());
  const Status refused = check_plan(broken);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("applies no convolution kernel epilogue or output "
                                         "transform"),
            std::string::npos)
      << refused.error().message;
}

// The raw result (here the biased sum) as a graph output: it must be stored as it is.
TEST(ConvEpilogue, AResultAnotherReaderNeedsStaysRaw) {
  GraphBuilder b;
  auto c = conv(b, false);
  b.output(c);
  b.output(b.node("r", Op::relu, {ref(c)}, kOut));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(conv_of(*plan).kernel_epilogue, "none");
  ASSERT_TRUE(conv_of(*plan).epilogue.has_value());
}

// A ReLU stored into a cat's window: a forward kernel writes it there through its output map.
TEST(ConvEpilogue, AResultPlacedInACatIsWrittenThroughTheWindow) {
  GraphBuilder b;
  auto r = b.node("r", Op::relu, {ref(conv(b))}, kOut);
  auto other = b.input("other", kOut);
  auto doubled = b.node("d", Op::mul_tensor, {ref(other), num(2)}, kOut);
  b.output(b.node("joined", Op::cat, {list({doubled, r}), integer(1)}, {2, 16, 6, 6}));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = conv_of(*plan);
  EXPECT_EQ(spec.kernel_epilogue, "bias_relu");
  EXPECT_FALSE(spec.epilogue.has_value());
  ASSERT_EQ(spec.stores.size(), 1u);
  EXPECT_EQ(plan->graph.name_of(spec.stores[0].value), "r");
  // Its window: channels 8-15 of the cat's [2, 16, 6, 6].
  const Access& window = plan->values.at("r");
  EXPECT_EQ(plan->graph.name_of(window.base), "joined");
  EXPECT_EQ(window.offset, 8 * 36);
  EXPECT_EQ(window.strides, (std::vector<int64_t>{16 * 36, 36, 6, 1}));
}

// A transposed convolution's phases write through output maps of their own: its result in a
// cat's window stays in the pass.
TEST(ConvEpilogue, ATransposedResultPlacedInACatStaysInThePass) {
  GraphBuilder b;
  auto x = b.input("x", {2, 4, 3, 3});
  auto w = b.param("w", {4, 8, 2, 2});
  auto bias = b.param("bias", {8});
  auto c = b.node("c", Op::convolution,
                  {ref(x), ref(w), ref(bias), ints({2, 2}), ints({0, 0}), ints({1, 1}), flag(true),
                   ints({0, 0}), integer(1)},
                  kOut);
  auto r = b.node("r", Op::relu, {ref(c)}, kOut);
  auto other = b.input("other", kOut);
  auto doubled = b.node("d", Op::mul_tensor, {ref(other), num(2)}, kOut);
  b.output(b.node("joined", Op::cat, {list({r, doubled}), integer(1)}, {2, 16, 6, 6}));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(conv_of(*plan).transposed);
  EXPECT_EQ(conv_of(*plan).kernel_epilogue, "none");
}

// conv -> x 2 -> `reduce` over dim `dim` (keepdim) -> tanh, the graph's output.
void channel_reduction_graph(GraphBuilder& b, Op reduce, int64_t dim = 1) {
  auto scaled = b.node("s", Op::mul_tensor, {ref(conv(b)), num(2)}, kOut);
  std::vector<int64_t> reduced = kOut;
  reduced[dim] = 1;
  auto r = b.node("r", reduce, {ref(scaled), ints({dim}), flag(true)}, reduced);
  b.output(b.node("t", Op::tanh, {ref(r)}, reduced));
}

// Level 2's conv + min over the channels: the direct kernel reduces the channels of each position
// as it stores (the bias its kernel epilogue, the scale its output transform, the tanh its reduce
// epilogue); one subtask, and the only buffer the [2, 1, 6, 6] output.
TEST(ConvEpilogue, AReductionOverTheChannelsFoldsIntoTheDirectKernel) {
  const std::pair<Op, ReduceOp> cases[] = {{Op::amin, ReduceOp::min},
                                           {Op::amax, ReduceOp::max},
                                           {Op::sum_dim_intlist, ReduceOp::sum}};
  for (const auto& [op, reduce] : cases) {
    GraphBuilder b;
    channel_reduction_graph(b, op);
    auto plan = plan_on(b, ConvEngine::direct);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->subtasks.size(), 1u);
    const Subtask& subtask = plan->subtasks[0];
    EXPECT_EQ(subtask.id.substr(0, 4), "s00_");
    EXPECT_EQ(subtask.kernel, "direct_conv");
    EXPECT_EQ(subtask.tunables.count("cudnn_alternative"), 0u);
    const ConvSpec& spec = std::get<ConvSpec>(subtask.spec);
    ASSERT_TRUE(spec.channel_reduce.has_value());
    EXPECT_EQ(*spec.channel_reduce, reduce);
    EXPECT_EQ(spec.kernel_epilogue, "bias");
    ASSERT_TRUE(spec.bias.has_value());
    EXPECT_EQ(plan->graph.name_of(spec.bias->base), "bias");
    ASSERT_TRUE(spec.output_transform.has_value());
    ASSERT_EQ(spec.output_transform->steps.size(), 1u);  // the scale
    EXPECT_EQ(plan->graph.nodes[spec.output_transform->steps[0].node].op, Op::mul_tensor);
    EXPECT_EQ(spec.output_transform->loads.size(), 1u);  // the bias load went with its step
    ASSERT_TRUE(spec.reduce_epilogue.has_value());
    ASSERT_EQ(spec.reduce_epilogue->steps.size(), 1u);
    EXPECT_EQ(plan->graph.nodes[spec.reduce_epilogue->steps[0].node].op, Op::tanh);
    ASSERT_EQ(spec.stores.size(), 1u);
    EXPECT_EQ(plan->graph.name_of(spec.stores[0].value), "t");
    ASSERT_EQ(plan->buffers.size(), 1u);
    EXPECT_EQ(plan->buffers[0].value, "t");
    // x, w, the bias and the output: the raw result is neither written nor read.
    EXPECT_DOUBLE_EQ(subtask.bytes, 4.0 * (2 * 4 * 36 + 8 * 4 * 9 + 8 + 2 * 36));
  }
}

// A bias add that is the whole prologue of the reduction: the kernel's epilogue, no transform.
TEST(ConvEpilogue, ABiasBeforeAChannelReductionIsTheKernelEpilogue) {
  GraphBuilder b;
  b.output(b.node("r", Op::amax, {ref(conv(b)), ints({1}), flag(true)}, {2, 1, 6, 6}));
  auto plan = plan_on(b, ConvEngine::direct);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 1u);
  const ConvSpec& spec = conv_of(*plan);
  ASSERT_TRUE(spec.channel_reduce.has_value());
  EXPECT_EQ(*spec.channel_reduce, ReduceOp::max);
  EXPECT_EQ(spec.kernel_epilogue, "bias");
  EXPECT_FALSE(spec.output_transform.has_value());
  ASSERT_TRUE(spec.reduce_epilogue.has_value());
  EXPECT_TRUE(spec.reduce_epilogue->steps.empty());
  EXPECT_EQ(spec.stores[0].from, (Operand{Operand::Kind::load, 0, 0}));
}

// The same on the implicit GEMM (either track): one subtask reducing the channels as it stores,
// timed against no cuDNN; past the 128 channels one tile holds, the reduction stays a pass.
TEST(ConvEpilogue, AReductionOverTheChannelsFoldsIntoTheImplicitGemm) {
  for (TensorMath math : {TensorMath::fp32, TensorMath::tf32}) {
    GraphBuilder b;
    channel_reduction_graph(b, Op::amin);
    PlanOptions options;
    options.conv_engine = ConvEngine::igemm_tf32x3;
    options.tensor_math = math;
    auto plan = make_plan(b.graph(), options);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->subtasks.size(), 1u);
    const Subtask& subtask = plan->subtasks[0];
    EXPECT_EQ(subtask.kernel, "igemm_tf32x3_conv");
    EXPECT_EQ(subtask.tunables.count("cudnn_alternative"), 0u);
    const ConvSpec& spec = std::get<ConvSpec>(subtask.spec);
    ASSERT_TRUE(spec.channel_reduce.has_value());
    EXPECT_EQ(*spec.channel_reduce, ReduceOp::min);
    EXPECT_EQ(spec.kernel_epilogue, "bias");
    ASSERT_TRUE(spec.output_transform.has_value());
    ASSERT_TRUE(spec.reduce_epilogue.has_value());
    EXPECT_EQ(plan->graph.name_of(spec.stores[0].value), "t");
  }
  GraphBuilder b;
  auto x = b.input("x", {2, 4, 6, 6});
  auto w = b.param("w", {130, 4, 3, 3});
  auto c = b.node("c", Op::convolution,
                  {ref(x), ref(w), ir::Arg{}, ints({1, 1}), ints({1, 1}), ints({1, 1}), flag(false),
                   ints({0, 0}), integer(1)},
                  {2, 130, 6, 6});
  b.output(b.node("r", Op::amin, {ref(c), ints({1}), flag(true)}, {2, 1, 6, 6}));
  auto plan = plan_on(b, ConvEngine::igemm_tf32x3);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->subtasks.size(), 2u);  // 130 > one tile's 128 channels
  EXPECT_FALSE(conv_of(*plan).channel_reduce.has_value());
}

// Which kernels reduce a convolution's channels: the direct kernel and the implicit GEMM where
// they hold every channel, the latter only where no cuDNN is timed against it; cuDNN never.
TEST(ConvEpilogue, TheImplicitGemmReducesChannelsOnlyUntimed) {
  GraphBuilder b;
  channel_reduction_graph(b, Op::amin);
  auto plan = plan_on(b, ConvEngine::igemm_tf32x3);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  Subtask subtask = conv_subtask(*plan);
  const ConvSpec& spec = std::get<ConvSpec>(subtask.spec);
  EXPECT_EQ(subtask.tunables.count("cudnn_alternative"), 0u);
  EXPECT_TRUE(kernel_reduces_channels(subtask, spec));  // forced: untimed
  subtask.tunables["cudnn_alternative"] = 1;
  EXPECT_FALSE(kernel_reduces_channels(subtask, spec));
  subtask.kernel = "cudnn_conv";
  EXPECT_FALSE(kernel_reduces_channels(subtask, spec));
  subtask.kernel = "direct_conv";
  EXPECT_TRUE(kernel_reduces_channels(subtask, spec));
}

// What stays a reduction of its own: over another dim; on cuDNN; with more output channels than
// one block of FP32 FMAs holds; with min's indices read; with the raw result read elsewhere too.
TEST(ConvEpilogue, OnlyAReductionOfEveryChannelOfTheDirectKernelFolds) {
  auto reductions = [](const Plan& plan) {
    return std::count_if(plan.subtasks.begin(), plan.subtasks.end(), [](const Subtask& subtask) {
      return std::holds_alternative<ReductionSpec>(subtask.spec);
    });
  };
  {
    GraphBuilder b;
    channel_reduction_graph(b, Op::amin, 2);
    auto plan = plan_on(b, ConvEngine::direct);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(reductions(*plan), 1);
    EXPECT_FALSE(conv_of(*plan).channel_reduce.has_value());
  }
  {
    GraphBuilder b;
    channel_reduction_graph(b, Op::amin);
    auto plan = plan_on(b, ConvEngine::cudnn);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(reductions(*plan), 1);
  }
  {
    GraphBuilder b;
    auto x = b.input("x", {2, 4, 6, 6});
    auto w = b.param("w", {72, 4, 3, 3});
    auto c = b.node("c", Op::convolution,
                    {ref(x), ref(w), ir::Arg{}, ints({1, 1}), ints({1, 1}), ints({1, 1}),
                     flag(false), ints({0, 0}), integer(1)},
                    {2, 72, 6, 6});
    b.output(b.node("r", Op::amin, {ref(c), ints({1}), flag(true)}, {2, 1, 6, 6}));
    auto plan = plan_on(b, ConvEngine::direct);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(reductions(*plan), 1);  // 72 > 8 slices of 8 channels
  }
  {
    GraphBuilder b;
    auto m = b.multi("m", Op::min_dim, {ref(conv(b)), integer(1), flag(true)},
                     {{2, 1, 6, 6}, {2, 1, 6, 6}});
    b.graph().nodes.back().outputs[1].dtype = ir::DType::int64;
    b.output(m);
    b.output(ir::ValueRef{ir::ValueRef::Kind::node, m.index, 1});
    auto plan = plan_on(b, ConvEngine::direct);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_FALSE(conv_of(*plan).channel_reduce.has_value());
  }
  {
    GraphBuilder b;
    auto c = conv(b, false);
    b.output(c);
    b.output(b.node("r", Op::amin, {ref(c), ints({1}), flag(true)}, {2, 1, 6, 6}));
    auto plan = plan_on(b, ConvEngine::direct);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    EXPECT_EQ(reductions(*plan), 1);
  }
}

// The folded steps still count as work (one FLOP per output each).
TEST(ConvEpilogue, TheCostModelCountsTheFoldedSteps) {
  GraphBuilder b;
  b.output(b.node("r", Op::relu, {ref(conv(b))}, kOut));
  auto kernel = plan_on(b);
  GraphBuilder again;
  again.output(again.node("r", Op::relu, {ref(conv(again))}, kOut));
  auto cudnn = plan_on(again, ConvEngine::cudnn);
  ASSERT_TRUE(kernel.ok() && cudnn.ok());
  EXPECT_DOUBLE_EQ(conv_subtask(*kernel).flops, conv_subtask(*cudnn).flops);
  EXPECT_LT(conv_subtask(*kernel).bytes, conv_subtask(*cudnn).bytes);  // no raw write + read
}

}  // namespace
}  // namespace stitch::plan
