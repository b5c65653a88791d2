// The convolution family in the Planner (issue 13 item 1): geometry, coverage, the bias lowered
// into the epilogue, a zero spatial pad folded into the padding (and every case that must not
// fold), fusion of the epilogue, pointwise convolutions as batched GEMMs, kernel choice per track
// and the cost model's flops and peaks.
#include <cmath>

#include <gtest/gtest.h>

#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/cost_model.h"
#include "plan/kernel_choice.h"
#include "plan/passes.h"
#include "plan/plan_check.h"
#include "plan/planner.h"
#include "plan/subtasks.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

// conv(x, w, bias?) with PyTorch's args: stride, padding, dilation, transposed, output_padding,
// groups.
ir::ValueRef conv(GraphBuilder& b, const std::string& id, ir::ValueRef x, ir::ValueRef w,
                  std::optional<ir::ValueRef> bias, std::vector<int64_t> out,
                  std::vector<int64_t> stride = {1, 1}, std::vector<int64_t> padding = {0, 0},
                  std::vector<int64_t> dilation = {1, 1}, bool transposed = false,
                  std::vector<int64_t> output_padding = {0, 0}, int64_t groups = 1) {
  return b.node(id, Op::convolution,
                {ref(x), ref(w), bias ? ref(*bias) : ir::Arg{}, ints(stride), ints(padding),
                 ints(dilation), flag(transposed), ints(output_padding), integer(groups)},
                std::move(out));
}

Result<Plan> plan_graph(GraphBuilder& b, TensorMath math = TensorMath::fp32,
                        ConvEngine engine = ConvEngine::automatic) {
  PlanOptions options;
  options.tensor_math = math;
  options.conv_engine = engine;
  return make_plan(b.graph(), options);
}

const ConvSpec& only_conv(const Plan& plan) {
  EXPECT_EQ(plan.subtasks.size(), 1u);
  return std::get<ConvSpec>(plan.subtasks.at(0).spec);
}

TEST(ConvGeometry, ReadsForwardAndTransposedConvolutions) {
  GraphBuilder b;
  auto x = b.input("x", {2, 8, 17, 22});
  auto w = b.param("w", {16, 4, 3, 3});
  conv(b, "c", x, w, std::nullopt, {2, 16, 8, 9}, {2, 2}, {1, 0}, {2, 2}, false, {0, 0}, 2);
  auto g = conv_geometry(b.graph(), b.graph().nodes[0]);
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->spatial(), 2);
  EXPECT_EQ(g->groups, 2);
  EXPECT_EQ(g->output, (std::vector<int64_t>{8, 9}));
  // (10 - 1) * 2 - 2 * 1 + 3 + 1 = 20: output_padding counts.
  GraphBuilder t;
  auto tx = t.input("x", {2, 16, 10});
  auto tw = t.param("w", {16, 4, 3});
  conv(t, "ct", tx, tw, std::nullopt, {2, 4, 20}, {2}, {1}, {1}, true, {1}, 1);
  auto tg = conv_geometry(t.graph(), t.graph().nodes[0]);
  ASSERT_TRUE(tg.has_value());
  EXPECT_TRUE(tg->transposed);
  EXPECT_EQ(tg->output, (std::vector<int64_t>{20}));
  // An output size that does not follow from the rest is not a convolution the planner reads.
  GraphBuilder bad;
  conv(bad, "c", bad.input("x", {1, 3, 8, 8}), bad.param("w", {4, 3, 3, 3}), std::nullopt,
       {1, 4, 8, 8});
  EXPECT_FALSE(conv_geometry(bad.graph(), bad.graph().nodes[0]).has_value());
  EXPECT_NE(uncovered_reason(bad.graph(), bad.graph().nodes[0]), "");
}

TEST(ConvPlan, BiasAndActivationRunAsOneEpilogue) {
  GraphBuilder b;
  auto x = b.input("x", {2, 3, 8, 8});
  auto w = b.param("w", {4, 3, 3, 3});
  auto bias = b.param("bias", {4});
  auto c = conv(b, "c", x, w, bias, {2, 4, 8, 8}, {1, 1}, {1, 1});
  b.output(b.node("r", Op::relu, {ref(c)}, {2, 4, 8, 8}));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = only_conv(*plan);
  EXPECT_EQ(plan->subtasks[0].kernel, "cudnn_conv");
  EXPECT_EQ(spec.pad_before, (std::vector<int64_t>{1, 1}));
  ASSERT_TRUE(spec.epilogue.has_value());
  ASSERT_EQ(spec.epilogue->steps.size(), 2u);  // + bias, relu
  EXPECT_EQ(plan->graph.nodes[spec.epilogue->steps[0].node].op, Op::add_tensor);
  EXPECT_EQ(spec.epilogue->loads[1].strides, (std::vector<int64_t>{0, 1, 0, 0}));  // bias[c]
  ASSERT_EQ(spec.stores.size(), 2u);  // the cuDNN result, then the epilogue's
  EXPECT_EQ(spec.stores[0].value.index, spec.node);
  EXPECT_EQ(plan->graph.nodes[spec.node].args[2].is_none(), true);  // the bias left the conv
}

// x -> constant_pad_nd(pads, value) -> conv(padding 1) -> output.
Result<Plan> padded_conv_plan(std::vector<int64_t> pads, double value, bool second_use = false) {
  GraphBuilder b;
  auto x = b.input("x", {1, 2, 6, 7});
  auto w = b.param("w", {3, 2, 3, 3});
  std::vector<int64_t> padded{1, 2, 6, 7};
  if (pads.size() >= 2) padded[3] += pads[0] + pads[1];
  if (pads.size() >= 4) padded[2] += pads[2] + pads[3];
  if (pads.size() >= 6) padded[1] += pads[4] + pads[5];
  auto pad = b.node("pad", Op::constant_pad_nd, {ref(x), ints(pads), num(value)}, padded);
  auto c = conv(b, "c", pad, w, std::nullopt, {1, 3, padded[2], padded[3]}, {1, 1}, {1, 1});
  b.output(c);
  if (second_use) b.output(b.node("twice", Op::mul_tensor, {ref(pad), num(2)}, padded));
  return plan_graph(b);
}

TEST(ConvPlan, ZeroSpatialPadFoldsIntoPadding) {
  auto plan = padded_conv_plan({1, 2, 0, 3}, 0.0);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = only_conv(*plan);
  EXPECT_EQ(spec.pad_before, (std::vector<int64_t>{1, 2}));  // H: 1 + 0, W: 1 + 1
  EXPECT_EQ(spec.pad_after, (std::vector<int64_t>{4, 3}));   // H: 1 + 3, W: 1 + 2
  EXPECT_EQ(spec.input, (std::vector<int64_t>{6, 7}));       // the pad's input
  EXPECT_EQ(spec.x.base.kind, ir::ValueRef::Kind::input);
  EXPECT_EQ(plan->subtasks[0].nodes.size(), 2u);  // pad and conv, one subtask
}

// Pads that do not fold are cats of fills (lower_constant_pad): the convolution reads the padded
// buffer, with only its own padding.
TEST(ConvPlan, OtherPadsDoNotFold) {
  for (auto plan : {padded_conv_plan({1, 1}, 0.5), padded_conv_plan({-1, 1}, 0.0),
                    padded_conv_plan({1, 1}, 0.0, true)}) {  // the padded tensor used twice
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    for (const Subtask& subtask : plan->subtasks)
      if (const auto* spec = std::get_if<ConvSpec>(&subtask.spec))
        EXPECT_EQ(spec->x.base.kind, ir::ValueRef::Kind::node);
  }
}

TEST(ConvPlan, ResidualAddJoinsTheEpilogue) {
  GraphBuilder b;
  auto x = b.input("x", {2, 4, 8, 8});
  auto w = b.param("w", {4, 4, 3, 3});
  auto c = conv(b, "c", x, w, std::nullopt, {2, 4, 8, 8}, {1, 1}, {1, 1});
  auto sum = b.node("add", Op::add_tensor, {ref(c), ref(x)}, {2, 4, 8, 8});
  b.output(b.node("r", Op::relu, {ref(sum)}, {2, 4, 8, 8}));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = only_conv(*plan);
  ASSERT_TRUE(spec.epilogue.has_value());
  EXPECT_EQ(spec.epilogue->steps.size(), 2u);
  EXPECT_EQ(spec.epilogue->loads[1].base.kind, ir::ValueRef::Kind::input);
}

TEST(ConvPlan, NonContiguousInputIsCloned) {
  GraphBuilder b;
  auto x = b.input("x", {2, 8, 8, 3});  // NHWC data, permuted to NCHW
  auto nchw = b.node("p", Op::permute, {ref(x), ints({0, 3, 1, 2})}, {2, 3, 8, 8});
  auto w = b.param("w", {4, 3, 3, 3});
  b.output(conv(b, "c", nchw, w, std::nullopt, {2, 4, 8, 8}, {1, 1}, {1, 1}));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 2u);
  EXPECT_TRUE(std::holds_alternative<CopySpec>(plan->subtasks[0].spec));
  EXPECT_TRUE(std::get<ConvSpec>(plan->subtasks[1].spec).x.is_contiguous());
}

TEST(ConvPlan, PointwiseConvolutionIsABatchedGemmOnViews) {
  GraphBuilder b;
  auto x = b.input("x", {2, 32, 7, 9});
  auto w = b.param("w", {64, 32, 1, 1});
  auto bias = b.param("bias", {64});
  auto c = conv(b, "c", x, w, bias, {2, 64, 7, 9});
  b.output(b.node("r", Op::relu, {ref(c)}, {2, 64, 7, 9}));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 1u);  // no copies: both operands are views
  const auto* gemm = std::get_if<MatmulSpec>(&plan->subtasks[0].spec);
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->batch, 2);
  EXPECT_EQ(gemm->m, 64);
  EXPECT_EQ(gemm->n, 7 * 9);
  EXPECT_EQ(gemm->k, 32);
  EXPECT_EQ(gemm->a.base.kind, ir::ValueRef::Kind::param);
  EXPECT_EQ(gemm->a.strides, (std::vector<int64_t>{0, 32, 1}));  // W shared by the batch
  EXPECT_EQ(gemm->b.base.kind, ir::ValueRef::Kind::input);
  EXPECT_EQ(gemm->b.strides, (std::vector<int64_t>{32 * 63, 63, 1}));
  ASSERT_TRUE(gemm->epilogue.has_value());
  EXPECT_EQ(gemm->epilogue->steps.size(), 2u);  // + bias[k] per row, relu
}

TEST(ConvPlan, OnlyPlainPointwiseConvolutionsBecomeGemms) {
  auto kind_of = [](std::vector<int64_t> stride, std::vector<int64_t> padding, int64_t groups) {
    GraphBuilder b;
    auto x = b.input("x", {2, 8, 6, 6});
    auto w = b.param("w", {8, 8 / groups, 1, 1});
    const int64_t out = (6 + 2 * padding[0] - 1) / stride[0] + 1;
    b.output(conv(b, "c", x, w, std::nullopt, {2, 8, out, out}, stride, padding, {1, 1}, false,
                  {0, 0}, groups));
    auto plan = plan_graph(b);
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    return plan.ok() ? std::string(spec_kind_name(plan->subtasks.back().spec)) : "";
  };
  EXPECT_EQ(kind_of({1, 1}, {0, 0}, 1), "matmul");
  EXPECT_EQ(kind_of({2, 2}, {0, 0}, 1), "conv");
  EXPECT_EQ(kind_of({1, 1}, {1, 1}, 1), "conv");
  EXPECT_EQ(kind_of({1, 1}, {0, 0}, 2), "conv");
}

// On the tensor-core tracks a pointwise convolution with a bias, of a value a convolution's
// subtask wrote (through other ops or not), stays a convolution: its kernels add the bias and the
// activation as they store (cuBLASLt could add a bias only along the positions of the NCHW
// product, so a pass would follow the GEMM). It is a GEMM without a bias, or of a graph input or a
// value computed from one without a convolution (NCHW, which a convolution kernel would transpose
// first), and on the fp32 track (a split-precision GEMM).
TEST(ConvPlan, TensorCoreTracksKeepAPointwiseConvolutionWithABias) {
  enum Source { input, relu_of_input, relu_of_conv };
  auto plan_of = [](bool with_bias, Source source, TensorMath math) {
    GraphBuilder b;
    auto x = b.input("x", {4, 32, 28, 28});
    if (source == relu_of_conv)
      x = conv(b, "pre_conv", x, b.param("pre_w", {32, 32, 3, 3}), std::nullopt, {4, 32, 28, 28},
               {1, 1}, {1, 1});
    if (source != input) x = b.node("pre", Op::relu, {ref(x)}, {4, 32, 28, 28});
    auto w = b.param("w", {64, 32, 1, 1});
    std::optional<ir::ValueRef> bias;
    if (with_bias) bias = b.param("bias", {64});
    auto c = conv(b, "c", x, w, bias, {4, 64, 28, 28});
    b.output(b.node("r", Op::relu, {ref(c)}, {4, 64, 28, 28}));
    return plan_graph(b, math);
  };
  auto last_kind = [](const Result<Plan>& plan) {
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    return plan.ok() ? std::string(spec_kind_name(plan->subtasks.back().spec)) : "";
  };
  for (const TensorMath math : {TensorMath::tf32, TensorMath::bf16}) {
    EXPECT_EQ(last_kind(plan_of(true, relu_of_conv, math)), "conv");
    EXPECT_EQ(last_kind(plan_of(false, relu_of_conv, math)), "matmul");
    EXPECT_EQ(last_kind(plan_of(true, input, math)), "matmul");
    EXPECT_EQ(last_kind(plan_of(true, relu_of_input, math)), "matmul");
  }
  EXPECT_EQ(last_kind(plan_of(true, relu_of_conv, TensorMath::fp32)), "matmul");
}

// cuDNN's convolution (forced: the fp32 track would time the implicit GEMM against it) at the
// FP32 peak on the fp32 track, the TF32 peak on the others.
TEST(ConvCost, FlopsAndThePeakOfTheTrack) {
  auto build = [](TensorMath math) {
    GraphBuilder b;
    auto x = b.input("x", {8, 64, 56, 56});
    auto w = b.param("w", {128, 32, 3, 3});
    b.output(conv(b, "c", x, w, std::nullopt, {8, 128, 28, 28}, {2, 2}, {1, 1}, {1, 1}, false,
                  {0, 0}, 2));
    return plan_graph(b, math, ConvEngine::cudnn);
  };
  const GpuPeaks h200 = h200_peaks();
  const double flops = 2.0 * 8 * 128 * (64 / 2) * 9 * 28 * 28;
  auto fp32 = build(TensorMath::fp32);
  ASSERT_TRUE(fp32.ok()) << fp32.error().message;
  const Subtask& strict = fp32->subtasks[0];
  EXPECT_DOUBLE_EQ(strict.flops, flops);
  EXPECT_DOUBLE_EQ(strict.bytes, 4.0 * (8 * 64 * 56 * 56 + 128 * 32 * 9 + 8 * 128 * 28 * 28));
  EXPECT_EQ(strict.tunables.count("tensor_math"), 0u);
  EXPECT_DOUBLE_EQ(compute_peak_tflops(strict, h200), h200.fp32_tflops);
  EXPECT_NEAR(strict.floor_us, flops / (h200.fp32_tflops * 1e6), 1e-9);
  EXPECT_EQ(strict.bound, Bound::compute);
  for (TensorMath math : {TensorMath::tf32, TensorMath::bf16}) {  // cuDNN: TF32 for both
    auto tensor = build(math);
    ASSERT_TRUE(tensor.ok());
    EXPECT_EQ(subtask_tensor_math(tensor->subtasks[0]), TensorMath::tf32);
    EXPECT_DOUBLE_EQ(compute_peak_tflops(tensor->subtasks[0], h200), h200.tf32_tflops);
  }
}

TEST(ConvCost, TransposedCountsTheForwardConvolutionItInverts) {
  GraphBuilder b;
  auto x = b.input("x", {2, 16, 10, 10});
  auto w = b.param("w", {16, 8, 3, 3});
  b.output(conv(b, "c", x, w, std::nullopt, {2, 8, 20, 20}, {2, 2}, {1, 1}, {1, 1}, true, {1, 1}));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_DOUBLE_EQ(plan->subtasks[0].flops, 2.0 * 2 * 16 * 8 * 9 * 10 * 10);
  EXPECT_TRUE(only_conv(*plan).transposed);
}

}  // namespace
}  // namespace stitch::plan

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

// Depthwise convolutions (groups == channels) run on kernels/conv_depthwise.cuh where the time
// model (estimate_depthwise_conv) says it beats cuDNN, as measured on the H200: planes of 28x28 and
// up, any window; 1-d and every other grouping stay on cuDNN.
std::string conv_kernel(std::vector<int64_t> x_shape, std::vector<int64_t> w_shape,
                        std::vector<int64_t> out, std::vector<int64_t> stride,
                        std::vector<int64_t> padding, int64_t groups, bool transposed = false,
                        TensorMath math = TensorMath::fp32) {
  GraphBuilder b;
  auto x = b.input("x", x_shape);
  auto w = b.param("w", w_shape);
  const std::vector<int64_t> ones(stride.size(), 1), zeros(stride.size(), 0);
  b.output(conv(b, "c", x, w, std::nullopt, out, stride, padding, ones, transposed, zeros, groups));
  auto plan = plan_graph(b, math);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? plan->subtasks.at(0).kernel : "";
}

TEST(ConvPlan, DepthwiseConvolutionTakesTheKernelWhereMeasuredFaster) {
  // MobileNetV2 3x3 (stride 1 and 2), EfficientNet 5x5 with a channel multiplier of 2, the MBConv
  // block's 5x5 stride 2 at 224x224, a 31x31 window: the kernel, 1.2-4.0x faster on the H200.
  EXPECT_EQ(conv_kernel({32, 96, 56, 56}, {96, 1, 3, 3}, {32, 96, 56, 56}, {1, 1}, {1, 1}, 96),
            "depthwise_conv");
  EXPECT_EQ(conv_kernel({32, 144, 56, 56}, {144, 1, 3, 3}, {32, 144, 28, 28}, {2, 2}, {1, 1}, 144),
            "depthwise_conv");
  EXPECT_EQ(conv_kernel({16, 240, 28, 28}, {480, 1, 5, 5}, {16, 480, 28, 28}, {1, 1}, {2, 2}, 240),
            "depthwise_conv");
  EXPECT_EQ(
      conv_kernel({10, 672, 224, 224}, {672, 1, 5, 5}, {10, 672, 112, 112}, {2, 2}, {2, 2}, 672),
      "depthwise_conv");
  EXPECT_EQ(conv_kernel({8, 64, 64, 64}, {64, 1, 31, 31}, {8, 64, 64, 64}, {1, 1}, {15, 15}, 64),
            "depthwise_conv");
  // 1-d: cuDNN (0.80x for the kernel); grouped but not depthwise: the implicit GEMM, timed
  // against cuDNN (whose grid it does not fill: TimedConvEngine below).
  EXPECT_EQ(conv_kernel({8, 64, 1000}, {64, 1, 5}, {8, 64, 1000}, {1}, {2}, 64), "cudnn_conv");
  EXPECT_EQ(conv_kernel({8, 64, 32, 32}, {64, 32, 3, 3}, {8, 64, 32, 32}, {1, 1}, {1, 1}, 2),
            "igemm_tf32x3_conv");
}

// F10: relu(x * scale + shift), scale and shift per channel (a training-mode BatchNorm's
// normalisation and activation), into a 3x3 convolution of `channels` channels in and out;
// `groups` == channels makes it depthwise.
struct NormalisedConv {
  bool full_scale = false;    // scale a full-size input instead of per channel
  bool return_input = false;  // the normalised value is also a graph output
  int64_t groups = 8;
  int64_t batch = 2, channels = 8, size = 16;
  ConvEngine engine = ConvEngine::automatic;
  TensorMath math = TensorMath::fp32;
};
Result<Plan> normalised_conv(const NormalisedConv& c) {
  GraphBuilder b;
  const std::vector<int64_t> shape{c.batch, c.channels, c.size, c.size};
  auto x = b.input("x", shape);
  auto scale = c.full_scale ? b.input("scale", shape) : b.param("scale", {1, c.channels, 1, 1});
  auto shift = b.param("shift", {1, c.channels, 1, 1});
  auto scaled = b.node("scaled", Op::mul_tensor, {ref(x), ref(scale)}, shape);
  auto shifted = b.node("shifted", Op::add_tensor, {ref(scaled), ref(shift)}, shape);
  auto normalised = b.node("relu", Op::relu, {ref(shifted)}, shape);
  auto w = b.param("w", {c.channels, c.channels / c.groups, 3, 3});
  b.output(conv(b, "c", normalised, w, std::nullopt, shape, {1, 1}, {1, 1}, {1, 1}, false, {0, 0},
                c.groups));
  if (c.return_input) b.output(normalised);
  return plan_graph(b, c.math, c.engine);
}

// The H200's model puts this one on the implicit GEMM (128 channels, 56x56, batch 8).
NormalisedConv implicit_gemm_sized() {
  return {.groups = 1, .batch = 8, .channels = 128, .size = 56};
}

TEST(ConvPlan, DepthwiseConvolutionAppliesTheNormalisationAsItLoads) {
  auto plan = normalised_conv({});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = only_conv(*plan);  // no elementwise pass: one subtask
  EXPECT_EQ(plan->subtasks[0].kernel, "depthwise_conv");
  ASSERT_TRUE(spec.prologue.has_value());
  EXPECT_EQ(spec.prologue->steps.size(), 3u);
  EXPECT_EQ(spec.prologue->loads.at(0), spec.x);
  EXPECT_EQ(spec.x.base.kind, ir::ValueRef::Kind::input);  // the raw input, not a normalised copy
  const std::vector<int64_t> space = conv_input_space(spec);
  for (size_t k = 1; k < spec.prologue->loads.size(); ++k)
    EXPECT_TRUE(per_plane(spec.prologue->loads[k], space)) << "load " << k;
}

TEST(ConvPlan, ImplicitGemmAppliesTheNormalisationAsItCopiesX) {
  auto plan = normalised_conv(implicit_gemm_sized());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = only_conv(*plan);  // no elementwise pass: one subtask
  EXPECT_EQ(plan->subtasks[0].kernel, "igemm_tf32x3_conv");
  ASSERT_TRUE(spec.prologue.has_value());
  EXPECT_EQ(spec.prologue->steps.size(), 3u);
  EXPECT_EQ(spec.x.base.kind, ir::ValueRef::Kind::input);
  EXPECT_TRUE(conv_takes_prologue(spec, h200_peaks(), TensorMath::fp32, ConvEngine::automatic));
  // Forced onto the implicit GEMM, a small one takes it too; on the tf32 track the kernel in one
  // TF32 product takes it; forced onto cuDNN, none does.
  auto forced = normalised_conv({.groups = 1, .engine = ConvEngine::igemm_tf32x3});
  ASSERT_TRUE(forced.ok()) << forced.error().message;
  EXPECT_TRUE(only_conv(*forced).prologue.has_value());
  auto tf32 = normalised_conv(
      {.groups = 1, .batch = 8, .channels = 128, .size = 56, .math = TensorMath::tf32});
  ASSERT_TRUE(tf32.ok()) << tf32.error().message;
  ASSERT_EQ(tf32->subtasks.size(), 1u);
  EXPECT_EQ(tf32->subtasks[0].kernel, "igemm_tf32x3_conv");
  EXPECT_EQ(subtask_tensor_math(tf32->subtasks[0]), TensorMath::tf32);
  EXPECT_TRUE(only_conv(*tf32).prologue.has_value());
  auto cudnn = normalised_conv(
      {.groups = 1, .batch = 8, .channels = 128, .size = 56, .engine = ConvEngine::cudnn});
  ASSERT_TRUE(cudnn.ok()) << cudnn.error().message;
  ASSERT_EQ(cudnn->subtasks.size(), 2u);
  EXPECT_EQ(cudnn->subtasks[1].kernel, "cudnn_conv");
  EXPECT_FALSE(std::get<ConvSpec>(cudnn->subtasks[1].spec).prologue.has_value());
}

// The copy pass the prologue rides on: the kernel's per-run transpose where it gathers
// channels-last (else one more pass), and cuDNN's side one pass for the transformed copy it reads.
TEST(ConvCost, APrologueCostsCudnnTheCopyItReads) {
  auto plan = normalised_conv(implicit_gemm_sized());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& fused = only_conv(*plan);
  ConvSpec bare = fused;
  bare.prologue.reset();
  const ConvIgemmEstimate with = estimate_conv_igemm(fused, h200_peaks());
  const ConvIgemmEstimate without = estimate_conv_igemm(bare, h200_peaks());
  const double pass = 2.0 * 4 * 8 * 128 * 56 * 56 / (h200_peaks().dram_gbps * 1e9) + kLaunchSeconds;
  EXPECT_NEAR(with.kernel_s, without.kernel_s, 1e-12);  // 128 channels: transposed anyway
  EXPECT_NEAR(with.cudnn_s - without.cudnn_s, pass, 1e-12);
  ConvSpec scalar = fused;  // 5 channels: the 4-byte gather reads x as it is, without a copy
  scalar.in_channels = 5;
  ConvSpec scalar_bare = scalar;
  scalar_bare.prologue.reset();
  ASSERT_TRUE(conv_igemm_eligible(scalar));
  EXPECT_GT(estimate_conv_igemm(scalar, h200_peaks()).kernel_s,
            estimate_conv_igemm(scalar_bare, h200_peaks()).kernel_s);
}

TEST(ConvPlan, NormalisationStaysAPassWhereTheKernelCannotTakeIt) {
  // Not depthwise, and too small for the implicit GEMM: cuDNN reads a stored input.
  auto dense = normalised_conv({.groups = 1});
  ASSERT_TRUE(dense.ok()) << dense.error().message;
  ASSERT_EQ(dense->subtasks.size(), 2u);
  EXPECT_FALSE(std::get<ConvSpec>(dense->subtasks[1].spec).prologue.has_value());
  // A second full-size operand: the kernel loads one input.
  auto two_inputs = normalised_conv({.full_scale = true});
  ASSERT_TRUE(two_inputs.ok()) << two_inputs.error().message;
  ASSERT_EQ(two_inputs->subtasks.size(), 2u);
  EXPECT_FALSE(std::get<ConvSpec>(two_inputs->subtasks[1].spec).prologue.has_value());
  // The normalised tensor is returned: it is stored, so the convolution reads it.
  auto returned = normalised_conv({.return_input = true});
  ASSERT_TRUE(returned.ok()) << returned.error().message;
  ASSERT_EQ(returned->subtasks.size(), 2u);
  EXPECT_FALSE(std::get<ConvSpec>(returned->subtasks[1].spec).prologue.has_value());
}

TEST(ConvPlan, PlanCheckHoldsTheConvolutionPrologueToTheKernel) {
  auto plan = normalised_conv({});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(check_plan(*plan).ok());
  Plan on_cudnn = *plan;
  on_cudnn.subtasks[0].kernel = "cudnn_conv";
  ASSERT_FALSE(check_plan(on_cudnn).ok());
  EXPECT_NE(check_plan(on_cudnn).error().message.find("only the depthwise kernel"),
            std::string::npos);
  Plan per_element = *plan;
  auto& prologue = *std::get<ConvSpec>(per_element.subtasks[0].spec).prologue;
  ASSERT_GE(prologue.loads.size(), 2u);
  prologue.loads[1].strides.back() = 1;  // a spatial stride: not one value per plane
  ASSERT_FALSE(check_plan(per_element).ok());
  EXPECT_NE(check_plan(per_element).error().message.find("per (n, c) plane"), std::string::npos);
  // The implicit GEMM's: forward only, x dense per image (a window of whole channels is).
  auto igemm = normalised_conv(implicit_gemm_sized());
  ASSERT_TRUE(igemm.ok()) << igemm.error().message;
  ASSERT_TRUE(check_plan(*igemm).ok());
  Plan transposed = *igemm;
  std::get<ConvSpec>(transposed.subtasks[0].spec).transposed = true;
  ASSERT_FALSE(check_plan(transposed).ok());
  Plan strided = *igemm;
  ConvSpec& strided_spec = std::get<ConvSpec>(strided.subtasks[0].spec);
  strided_spec.x.strides.back() = 2;  // not dense within an image
  strided_spec.prologue->loads[0] = strided_spec.x;
  ASSERT_FALSE(check_plan(strided).ok());
  EXPECT_NE(check_plan(strided).error().message.find("dense per image"), std::string::npos)
      << check_plan(strided).error().message;
  Plan depthwise_window = *plan;  // the depthwise kernel reads its prologue's x contiguous
  ConvSpec& window_spec = std::get<ConvSpec>(depthwise_window.subtasks[0].spec);
  window_spec.x.strides[0] *= 2;
  window_spec.prologue->loads[0] = window_spec.x;
  ASSERT_FALSE(check_plan(depthwise_window).ok());
  EXPECT_NE(check_plan(depthwise_window).error().message.find("depthwise kernel reads"),
            std::string::npos)
      << check_plan(depthwise_window).error().message;
}

// conv -> bias -> ReLU -> conv, both on the implicit GEMM: the chain only the second reads is the
// first's kernel epilogue (its stores apply it, conv_epilogue.h), not the second's prologue.
TEST(ConvPlan, AChainOnlyTheConvolutionReadsStaysWithItsProducer) {
  GraphBuilder b;
  const std::vector<int64_t> shape{8, 128, 56, 56};
  auto x = b.input("x", shape);
  auto w1 = b.param("w1", {128, 128, 3, 3});
  auto bias = b.param("bias", {1, 128, 1, 1});
  auto w2 = b.param("w2", {128, 128, 3, 3});
  auto c1 = conv(b, "c1", x, w1, std::nullopt, shape, {1, 1}, {1, 1}, {1, 1});
  auto biased = b.node("biased", Op::add_tensor, {ref(c1), ref(bias)}, shape);
  auto relu = b.node("relu", Op::relu, {ref(biased)}, shape);
  b.output(conv(b, "c2", relu, w2, std::nullopt, shape, {1, 1}, {1, 1}, {1, 1}));
  auto plan = plan_graph(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 2u);
  const auto& first = std::get<ConvSpec>(plan->subtasks[0].spec);
  const auto& second = std::get<ConvSpec>(plan->subtasks[1].spec);
  EXPECT_EQ(first.kernel_epilogue, "bias_relu");
  EXPECT_FALSE(second.prologue.has_value());
}

DepthwiseEstimate depthwise_estimate(std::vector<int64_t> x_shape, std::vector<int64_t> w_shape,
                                     std::vector<int64_t> out, std::vector<int64_t> stride,
                                     std::vector<int64_t> padding) {
  GraphBuilder b;
  auto x = b.input("x", x_shape);
  auto w = b.param("w", w_shape);
  const std::vector<int64_t> ones(stride.size(), 1), zeros(stride.size(), 0);
  b.output(
      conv(b, "c", x, w, std::nullopt, out, stride, padding, ones, false, zeros, x_shape.at(1)));
  auto plan = plan_graph(b);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? estimate_depthwise_conv(only_conv(*plan), h200_peaks()) : DepthwiseEstimate{};
}

// The estimates against what the H200 measured (conv_depthwise_bench, 2026-12-03): within 25% on
// large planes, memory-bound, in the ratio of the efficiencies once the fixed costs are taken off.
TEST(ConvCost, DepthwiseEstimateFollowsTheMeasuredTimes) {
  const DepthwiseEstimate mbconv =
      depthwise_estimate({10, 672, 224, 224}, {672, 1, 5, 5}, {10, 672, 112, 112}, {2, 2}, {2, 2});
  ASSERT_TRUE(mbconv.eligible);
  EXPECT_NEAR(mbconv.kernel_s, 670.9e-6, 0.25 * 670.9e-6);
  EXPECT_NEAR(mbconv.cudnn_s, 1877.5e-6, 0.25 * 1877.5e-6);
  EXPECT_NEAR((mbconv.cudnn_s - kCudnnDepthwiseFixedSeconds) /
                  (mbconv.kernel_s - kDepthwiseKernelFixedSeconds),
              kDepthwiseKernelMemory / kCudnnDepthwiseMemory, 1e-9);
  // 7x7 planes: fixed costs dominate; the two within a few microseconds, as measured (11 vs 9 us).
  const DepthwiseEstimate small =
      depthwise_estimate({10, 960, 7, 7}, {960, 1, 3, 3}, {10, 960, 7, 7}, {1, 1}, {1, 1});
  EXPECT_LT(std::abs(small.kernel_s - small.cudnn_s), 4e-6);
  EXPECT_LT(small.kernel_s, 20e-6);
  // A 31x31 window is compute-bound: the ratio of the compute efficiencies.
  const DepthwiseEstimate large_window =
      depthwise_estimate({8, 64, 64, 64}, {64, 1, 31, 31}, {8, 64, 64, 64}, {1, 1}, {15, 15});
  EXPECT_NEAR((large_window.cudnn_s - kCudnnDepthwiseFixedSeconds) /
                  (large_window.kernel_s - kDepthwiseKernelFixedSeconds),
              kDepthwiseKernelCompute / kCudnnDepthwiseCompute, 1e-9);
}

}  // namespace
}  // namespace stitch::plan

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

// conv → BatchNorm (training-mode capture) → relu, the BatchNorm's running statistics given.
GraphBuilder conv_bn_relu(bool conv_output_also_returned) {
  GraphBuilder b;
  auto x = b.input("x", {8, 16, 32, 32});
  auto w = b.param("w", {32, 16, 3, 3});
  auto bias = b.param("b", {32});
  auto gamma = b.param("gamma", {32});
  auto beta = b.param("beta", {32});
  auto mean = b.param("rm", {32});
  auto var = b.param("rv", {32});
  auto c = conv(b, "c", x, w, bias, {8, 32, 32, 32}, {1, 1}, {1, 1});
  auto bn =
      b.multi("bn", Op::batch_norm_functional,
              {ref(c), ref(gamma), ref(beta), ref(mean), ref(var), flag(true), num(0.1), num(1e-5)},
              {{8, 32, 32, 32}, {32}, {32}, {32}, {32}});
  b.output(b.node("r", Op::relu, {ref(bn)}, {8, 32, 32, 32}));
  if (conv_output_also_returned) b.output(c);
  return b;
}

// --inference folds the BatchNorm into the convolution's weight and bias (computed at init): the
// forward is the convolution with its bias + relu epilogue, nothing else; where the convolution's
// own output is needed too, nothing folds.
TEST(ConvPlan, InferenceFoldsBatchNormIntoTheConvolution) {
  PlanOptions inference;
  inference.inference = true;
  GraphBuilder b = conv_bn_relu(false);
  auto plan = make_plan(b.graph(), inference);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::vector<const Subtask*> forward;
  for (const Subtask& subtask : plan->subtasks)
    if (!subtask.at_init) forward.push_back(&subtask);
  ASSERT_EQ(forward.size(), 1u);
  const auto* spec = std::get_if<ConvSpec>(&forward[0]->spec);
  ASSERT_NE(spec, nullptr);
  ASSERT_TRUE(spec->epilogue.has_value());
  EXPECT_EQ(spec->epilogue->steps.size(), 2u);             // + folded bias, relu
  EXPECT_EQ(spec->w.base.kind, ir::ValueRef::Kind::node);  // the folded weight, made at init
  EXPECT_EQ(count_op(plan->graph, Op::batch_norm_functional), 0);
  EXPECT_EQ(count_op(plan->graph, Op::rsqrt), 1);

  GraphBuilder kept = conv_bn_relu(true);
  auto unfolded = make_plan(kept.graph(), inference);
  ASSERT_TRUE(unfolded.ok()) << unfolded.error().message;
  for (const Subtask& subtask : unfolded->subtasks)
    if (const auto* conv_spec = std::get_if<ConvSpec>(&subtask.spec))
      EXPECT_EQ(conv_spec->w.base.kind, ir::ValueRef::Kind::param);
  // Training semantics (the default) never fold: batch statistics.
  auto training = make_plan(conv_bn_relu(false).graph(), PlanOptions{});
  ASSERT_TRUE(training.ok());
  EXPECT_GT(training->subtasks.size(), 1u);
}

}  // namespace
}  // namespace stitch::plan

namespace stitch::plan {
namespace {

using namespace testing;  // NOLINT: test helpers

// The implicit-GEMM 3xTF32 convolution (kernels/conv_igemm_tf32x3.cuh, issue 13 item 2): chosen
// on the fp32 track where the time model (estimate_conv_igemm) says it beats strict-FP32 cuDNN,
// never on the tf32 / bf16 tracks (cuDNN's TF32 engines), forced either way by
// PlanOptions::conv_engine.
Result<Plan> single_conv_plan(std::vector<int64_t> x_shape, std::vector<int64_t> w_shape,
                              std::vector<int64_t> out, std::vector<int64_t> stride,
                              std::vector<int64_t> padding, int64_t groups,
                              const PlanOptions& options, bool transposed = false) {
  GraphBuilder b;
  auto x = b.input("x", x_shape);
  auto w = b.param("w", w_shape);
  const std::vector<int64_t> ones(stride.size(), 1), zeros(stride.size(), 0);
  b.output(conv(b, "c", x, w, std::nullopt, out, stride, padding, ones, transposed, zeros, groups));
  return make_plan(b.graph(), options);
}

PlanOptions with_math(TensorMath math, ConvEngine engine = ConvEngine::automatic) {
  PlanOptions options;
  options.tensor_math = math;
  options.conv_engine = engine;
  return options;
}

// VGG16's conv3 block at KernelBench level 3's batch: 256 -> 256 channels, 3x3, 56 x 56.
Result<Plan> vgg_conv(const PlanOptions& options) {
  return single_conv_plan({10, 256, 56, 56}, {256, 256, 3, 3}, {10, 256, 56, 56}, {1, 1}, {1, 1}, 1,
                          options);
}

// At the efficiencies measured on the H200 (kernel_choice.h) the kernel beats cuDNN's strict
// FP32 on VGG16's large convolution (2.4x measured, 2.8x estimated).
TEST(ConvIgemmPlan, Fp32TrackPicksTheKernelForALargeConvolution) {
  auto plan = vgg_conv(with_math(TensorMath::fp32));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->subtasks.at(0).kernel, "igemm_tf32x3_conv");
  EXPECT_EQ(plan->subtasks.at(0).tunables.count("forced"), 0u);
  const ConvIgemmEstimate estimate = estimate_conv_igemm(only_conv(*plan), h200_peaks());
  ASSERT_TRUE(estimate.eligible);
  EXPECT_TRUE(estimate.prefer_kernel);
  EXPECT_LT(estimate.kernel_s, 0.5 * estimate.cudnn_s);
}

TEST(ConvIgemmPlan, TheForcedKernelRecordsItsTimeModelAndTheTf32x3Floor) {
  auto plan = vgg_conv(with_math(TensorMath::fp32, ConvEngine::igemm_tf32x3));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const Subtask& subtask = plan->subtasks.at(0);
  EXPECT_EQ(subtask.kernel, "igemm_tf32x3_conv");
  // The reason, in the plan: both sides of the time model.
  ASSERT_EQ(subtask.tunables.count("estimate_us"), 1u);
  ASSERT_EQ(subtask.tunables.count("cudnn_estimate_us"), 1u);
  EXPECT_EQ(subtask.tunables.at("forced"), 1);
  EXPECT_EQ(subtask.tunables.count("workspace_bytes"), 0u);  // none
  // Its floor is at the FP32-accurate 3xTF32 rate.
  const GpuPeaks h200 = h200_peaks();
  EXPECT_DOUBLE_EQ(compute_peak_tflops(subtask, h200), tf32x3_tflops(h200));
  EXPECT_NEAR(subtask.floor_us, subtask.flops / (tf32x3_tflops(h200) * 1e6), 1e-6);
}

// The tensor-core tracks run the implicit GEMM in one TF32 product, against cuDNN's TF32 engines:
// a third of the fp32 track's products per K tile at kConvIgemmOneProductEfficiency of their rate
// (and kConvIgemmWideTileGain on the 256-wide tile, which VGG's 256 -> 256 layer takes), the floor
// at the TF32 peak; the program times cuDNN (TF32, tensor_math) against it where the model is not
// confident.
TEST(ConvIgemmPlan, TensorCoreTracksRunTheKernelInOneTf32Product) {
  const GpuPeaks h200 = h200_peaks();
  auto fp32 = vgg_conv(with_math(TensorMath::fp32));
  ASSERT_TRUE(fp32.ok()) << fp32.error().message;
  const ConvIgemmEstimate three = estimate_conv_igemm(only_conv(*fp32), h200);
  for (TensorMath math : {TensorMath::tf32, TensorMath::bf16}) {
    auto plan = vgg_conv(with_math(math));
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const Subtask& subtask = plan->subtasks.at(0);
    EXPECT_EQ(subtask.kernel, "igemm_tf32x3_conv");
    EXPECT_EQ(subtask_tensor_math(subtask), TensorMath::tf32);
    EXPECT_DOUBLE_EQ(compute_peak_tflops(subtask, h200), h200.tf32_tflops);
    const ConvIgemmEstimate one = estimate_conv_igemm(only_conv(*plan), h200, math);
    // 245 tiles 256 wide fill the 132 SMs: the wide tile, half the waves of twice the products.
    EXPECT_TRUE(conv_igemm_wide_tile(only_conv(*plan), h200.sms));
    // Compute-bound (72 K tiles a tile): the tiles' time scales by products and efficiency; the
    // launches and the channels-last copy of x do not.
    const double fixed =
        kLaunchSeconds + 2.0 * 4 * 10 * 256 * 56 * 56 / (h200.dram_gbps * 1e9) + kLaunchSeconds;
    EXPECT_NEAR((one.kernel_s - fixed) / (three.kernel_s - fixed),
                1.0 / 3.0 / kConvIgemmOneProductEfficiency / kConvIgemmWideTileGain, 1e-9);
    EXPECT_NEAR(
        one.cudnn_s - kLaunchSeconds,
        2.0 * 10 * 256 * 56 * 56 * 256 * 9 / (h200.tf32_tflops * 1e12 * kCudnnTf32ConvEfficiency),
        1e-9);
    EXPECT_EQ(subtask.tunables.at("estimate_us"), std::llround(one.kernel_s * 1e6));
    EXPECT_EQ(subtask.tunables.at("cudnn_estimate_us"), std::llround(one.cudnn_s * 1e6));
  }
  // Both TF32 sides rest on few layers: cuDNN is timed against the kernel up to
  // kTf32TimedEngineRatio, past the fp32 track's band (VGG's first 64 -> 64 layer, on the narrow
  // tile, is rated 1.2x slower on the kernel; an H100 ran both in 0.36 ms, 2026-12-06).
  auto vgg1 = single_conv_plan({10, 64, 224, 224}, {64, 64, 3, 3}, {10, 64, 224, 224}, {1, 1},
                               {1, 1}, 1, with_math(TensorMath::tf32));
  ASSERT_TRUE(vgg1.ok()) << vgg1.error().message;
  const auto& timed = vgg1->subtasks.at(0).tunables;
  EXPECT_EQ(vgg1->subtasks.at(0).kernel, "igemm_tf32x3_conv");
  EXPECT_EQ(timed.at("cudnn_alternative"), 1);
  const double ratio = static_cast<double>(timed.at("estimate_us")) /
                       static_cast<double>(timed.at("cudnn_estimate_us"));
  EXPECT_GT(ratio, kConfidentKernelRatio);
  EXPECT_LE(ratio, kTf32TimedEngineRatio);
  EXPECT_FALSE(conv_igemm_wide_tile(only_conv(*vgg1), h200.sms));
  // VGG's 128 -> 128 layer, rated at 0.67 of cuDNN (where the fp32 track's margin would run it
  // untimed), measured 1.07x slower than cuDNN: timed under TF32 math.
  auto vgg2 = single_conv_plan({10, 128, 112, 112}, {128, 128, 3, 3}, {10, 128, 112, 112}, {1, 1},
                               {1, 1}, 1, with_math(TensorMath::tf32));
  ASSERT_TRUE(vgg2.ok()) << vgg2.error().message;
  const auto& vgg2_tunables = vgg2->subtasks.at(0).tunables;
  EXPECT_EQ(vgg2->subtasks.at(0).kernel, "igemm_tf32x3_conv");
  EXPECT_EQ(vgg2_tunables.count("cudnn_alternative"), 1u);
  const double vgg2_ratio = static_cast<double>(vgg2_tunables.at("estimate_us")) /
                            static_cast<double>(vgg2_tunables.at("cudnn_estimate_us"));
  EXPECT_LE(vgg2_ratio, kConfidentKernelRatio);
  EXPECT_GT(vgg2_ratio, kTf32ConfidentKernelRatio);
  // Few channels (K = 72): the one-product kernel is rated far slower than cuDNN's TF32 engines
  // and does not run; the direct FP32 kernel is timed against cuDNN there (DirectConvPlan).
  auto few = single_conv_plan({128, 8, 128, 128}, {64, 8, 3, 3}, {128, 64, 126, 126}, {1, 1},
                              {0, 0}, 1, with_math(TensorMath::tf32));
  ASSERT_TRUE(few.ok()) << few.error().message;
  EXPECT_NE(few->subtasks.at(0).kernel, "igemm_tf32x3_conv");
  EXPECT_GT(
      estimate_conv_igemm(only_conv(*few), h200, TensorMath::tf32).kernel_s,
      kTf32TimedEngineRatio * estimate_conv_igemm(only_conv(*few), h200, TensorMath::tf32).cudnn_s);
}

// The one-product kernel's 256-wide tile, as kernels/conv_igemm_common.cuh plans it (the same
// shapes in ConvIgemmWgmmaTile.WidestForOneProductOnManyChannelsUnsplit): VGG16's conv3 (245
// tiles) takes it; its conv5 (32 wide tiles, K = 4608) would split K, so 128; 384 channels pad
// less on 128-wide tiles; a short K (3 tiles) never splits, however few the tiles.
TEST(ConvIgemmPlan, WideTileWhereTheKernelTakesIt) {
  auto spec_of = [](std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> y) {
    auto plan = single_conv_plan(std::move(x), std::move(w), std::move(y), {1, 1}, {1, 1}, 1,
                                 with_math(TensorMath::tf32, ConvEngine::igemm_tf32x3));
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    return only_conv(*plan);
  };
  const int sms = h200_peaks().sms;
  EXPECT_EQ(sms, 132);
  EXPECT_TRUE(
      conv_igemm_wide_tile(spec_of({10, 256, 56, 56}, {256, 256, 3, 3}, {10, 256, 56, 56}), sms));
  EXPECT_FALSE(
      conv_igemm_wide_tile(spec_of({10, 512, 14, 14}, {512, 512, 3, 3}, {10, 512, 14, 14}), sms));
  EXPECT_FALSE(
      conv_igemm_wide_tile(spec_of({10, 256, 56, 56}, {384, 256, 3, 3}, {10, 384, 56, 56}), sms));
  EXPECT_TRUE(conv_igemm_wide_tile(spec_of({1, 8, 8, 8}, {256, 8, 3, 3}, {1, 256, 8, 8}), sms));
  EXPECT_FALSE(conv_igemm_wide_tile(spec_of({1, 8, 8, 8}, {128, 8, 3, 3}, {1, 128, 8, 8}), sms));
}

// cuDNN's workspace under TF32 math holds x, w and y (its NCHW engines transpose them to NHWC
// there): AlexNet's conv2 at batch 1024 needs more than the fp32 track's 256 MiB, a small
// convolution keeps 256 MiB, a huge one stops at kConvTf32WorkspaceMaxBytes. The plan gives cuDNN
// that workspace, alone or timed against the kernel.
TEST(ConvPlan, Tf32CudnnWorkspaceHoldsTheOperands) {
  auto alexnet_conv2 = [](TensorMath math) {
    return single_conv_plan({1024, 96, 27, 27}, {256, 96, 5, 5}, {1024, 256, 27, 27}, {1, 1},
                            {2, 2}, 1, with_math(math, ConvEngine::cudnn));
  };
  auto fp32 = alexnet_conv2(TensorMath::fp32);
  ASSERT_TRUE(fp32.ok()) << fp32.error().message;
  EXPECT_EQ(cudnn_conv_workspace_bytes(only_conv(*fp32), TensorMath::fp32), kConvWorkspaceBytes);
  EXPECT_EQ(fp32->subtasks.at(0).tunables.at("workspace_bytes"), kConvWorkspaceBytes);
  auto tf32 = alexnet_conv2(TensorMath::tf32);
  ASSERT_TRUE(tf32.ok()) << tf32.error().message;
  const int64_t operands = 4 * (1024 * 96 * 27 * 27 + 256 * 96 * 25 + 1024 * 256 * 27 * 27);
  const int64_t expected = (operands + (1 << 20) - 1) / (1 << 20) * (1 << 20);
  EXPECT_GT(expected, kConvWorkspaceBytes);
  EXPECT_EQ(cudnn_conv_workspace_bytes(only_conv(*tf32), TensorMath::tf32), expected);
  EXPECT_EQ(tf32->subtasks.at(0).tunables.at("workspace_bytes"), expected);
  auto small = single_conv_plan({2, 16, 16, 16}, {16, 16, 3, 3}, {2, 16, 16, 16}, {1, 1}, {1, 1}, 1,
                                with_math(TensorMath::tf32));
  ASSERT_TRUE(small.ok()) << small.error().message;
  EXPECT_EQ(cudnn_conv_workspace_bytes(only_conv(*small), TensorMath::tf32), kConvWorkspaceBytes);
  ConvSpec huge = only_conv(*tf32);
  huge.batch = 1 << 14;
  EXPECT_EQ(cudnn_conv_workspace_bytes(huge, TensorMath::bf16), kConvTf32WorkspaceMaxBytes);
  // Timed against the kernel, cuDNN gets the same workspace.
  auto timed = vgg_conv(with_math(TensorMath::tf32));
  ASSERT_TRUE(timed.ok()) << timed.error().message;
  const Subtask& subtask = timed->subtasks.at(0);
  if (subtask.tunables.count("cudnn_alternative"))
    EXPECT_EQ(subtask.tunables.at("workspace_bytes"),
              cudnn_conv_workspace_bytes(only_conv(*timed), TensorMath::tf32));
}

TEST(ConvIgemmPlan, StrictFp32GemmOptionKeepsCudnn) {
  PlanOptions strict = with_math(TensorMath::fp32);
  strict.allow_tf32x3 = false;
  auto plan = vgg_conv(strict);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->subtasks.at(0).kernel, "cudnn_conv");
  EXPECT_EQ(plan->subtasks.at(0).tunables.count("tensor_math"), 0u);  // strict FP32
}

TEST(ConvIgemmPlan, TinyAndDepthwiseConvolutionsSkipTheKernel) {
  const PlanOptions fp32 = with_math(TensorMath::fp32);
  auto kernel_of = [](const Result<Plan>& plan) {
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    return plan.ok() ? plan->subtasks.at(0).kernel : "";
  };
  // Launch bound: a tiny convolution.
  EXPECT_EQ(kernel_of(single_conv_plan({2, 3, 8, 8}, {4, 3, 3, 3}, {2, 4, 8, 8}, {1, 1}, {1, 1}, 1,
                                       fp32)),
            "cudnn_conv");
  // Depthwise: the direct depthwise kernel (measured faster than cuDNN on this plane), not the
  // implicit GEMM, even when that is forced.
  EXPECT_EQ(kernel_of(single_conv_plan({10, 256, 56, 56}, {256, 1, 3, 3}, {10, 256, 56, 56}, {1, 1},
                                       {1, 1}, 256,
                                       with_math(TensorMath::fp32, ConvEngine::igemm_tf32x3))),
            "depthwise_conv");
}

// A transposed convolution runs on the kernel as its output phases' forward convolutions
// (kernels/conv_transpose.cuh) where the time model prefers it — at stride 2, where cuDNN's strict
// engines are slow — and never with asymmetric padding (no PyTorch module makes one).
TEST(ConvIgemmPlan, TransposedConvolutionsFollowTheTimeModel) {
  auto kernel_of = [](const Result<Plan>& plan) {
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    return plan.ok() ? plan->subtasks.at(0).kernel : "";
  };
  // (28 - 1) * 2 - 2 + 3 = 55.
  auto transposed = [&](ConvEngine engine) {
    return single_conv_plan({10, 256, 28, 28}, {256, 256, 3, 3}, {10, 256, 55, 55}, {2, 2}, {1, 1},
                            1, with_math(TensorMath::fp32, engine), true);
  };
  EXPECT_EQ(kernel_of(transposed(ConvEngine::automatic)), "igemm_tf32x3_conv");
  EXPECT_EQ(kernel_of(transposed(ConvEngine::cudnn)), "cudnn_conv");
  auto forced = transposed(ConvEngine::igemm_tf32x3);
  EXPECT_EQ(kernel_of(forced), "igemm_tf32x3_conv");
  ConvSpec spec = only_conv(*forced);
  EXPECT_TRUE(conv_igemm_eligible(spec));
  // The time model counts the taps an output takes (a quarter of the kernel's at stride 2 x 2),
  // at cuDNN's transposed efficiency.
  ConvSpec forward = spec;
  forward.transposed = false;
  const ConvIgemmEstimate as_transposed = estimate_conv_igemm(spec, h200_peaks());
  const ConvIgemmEstimate as_forward = estimate_conv_igemm(forward, h200_peaks());
  EXPECT_NEAR(as_transposed.cudnn_s - kLaunchSeconds,
              (as_forward.cudnn_s - kLaunchSeconds) / 4 * kCudnnStrictConvEfficiency /
                  kCudnnStrictTransposedConvEfficiency,
              1e-12);
  // On the tf32 track too, in one TF32 product (against cuDNN's TF32 engines).
  auto tf32 = single_conv_plan({10, 256, 28, 28}, {256, 256, 3, 3}, {10, 256, 55, 55}, {2, 2},
                               {1, 1}, 1, with_math(TensorMath::tf32), true);
  EXPECT_EQ(kernel_of(tf32), "igemm_tf32x3_conv");
  EXPECT_EQ(subtask_tensor_math(tf32->subtasks.at(0)), TensorMath::tf32);
  spec.pad_after[0] += 1;
  EXPECT_FALSE(conv_igemm_eligible(spec));
}

// The engine the time model picks for the convolutions conv_igemm_tf32x3_bench timed on the H200
// (2026-12-04, fp32 track, the wgmma kernel against cuDNN's strict FP32 engines): the kernel
// where it ran in at most kTf32x3Margin of cuDNN's time, untimed; where the kernel was slower,
// cuDNN or a kernel timed against cuDNN at init (cudnn_alternative: cuDNN then runs), never a
// kernel alone; the close calls between (0.8-1.0) may go either way.
TEST(ConvIgemmCost, PicksTheEngineTheH200MeasuredFaster) {
  struct Measured {
    const char* name;
    int spatial;
    int64_t batch, in_channels, out_channels, size, kernel, stride, pad;
    bool transposed;
    double kernel_ms, cudnn_ms;
  };
  // The bench gave two of the transposed ones output padding 1 (one more output row and column
  // per dim), which the model's choice does not turn on; here none has it.
  const Measured rows[] = {
      {"alexnet_conv2_k5", 2, 1024, 96, 256, 27, 5, 1, 2, false, 9.129, 20.779},
      {"l2_16to64_k3_256", 2, 128, 16, 64, 256, 3, 1, 0, false, 4.760, 4.267},
      {"l2_8to64_k3_128", 2, 128, 8, 64, 128, 3, 1, 0, false, 0.916, 0.663},
      {"l2_3to16_k3_32", 2, 128, 3, 16, 32, 3, 1, 0, false, 0.044, 0.021},
      {"t2d_64_k3_s1_256", 2, 128, 64, 64, 256, 3, 1, 1, true, 12.677, 9.111},
      {"t2d_64_k3_s2_128", 2, 128, 64, 64, 128, 3, 2, 1, true, 5.734, 12.949},
      {"t3d_32to64_k3_s2_32", 3, 32, 32, 64, 32, 3, 2, 1, true, 4.706, 17.641},
      {"t3d_64to128_k3_s2_24", 3, 16, 64, 128, 24, 3, 2, 1, true, 2.965, 8.990},
  };
  for (const Measured& m : rows) {
    SCOPED_TRACE(m.name);
    const int64_t out = m.transposed ? (m.size - 1) * m.stride - 2 * m.pad + m.kernel
                                     : (m.size + 2 * m.pad - m.kernel) / m.stride + 1;
    std::vector<int64_t> x = {m.batch, m.in_channels}, y = {m.batch, m.out_channels};
    std::vector<int64_t> w = m.transposed ? std::vector<int64_t>{m.in_channels, m.out_channels}
                                          : std::vector<int64_t>{m.out_channels, m.in_channels};
    x.insert(x.end(), m.spatial, m.size);
    y.insert(y.end(), m.spatial, out);
    w.insert(w.end(), m.spatial, m.kernel);
    auto plan = single_conv_plan(x, w, y, std::vector<int64_t>(m.spatial, m.stride),
                                 std::vector<int64_t>(m.spatial, m.pad), 1,
                                 with_math(TensorMath::fp32), m.transposed);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    const bool kernel_won = m.kernel_ms <= kTf32x3Margin * m.cudnn_ms;
    const bool cudnn_won = m.kernel_ms >= m.cudnn_ms;
    ASSERT_TRUE(kernel_won || cudnn_won) << "a close call: no engine to expect";
    const Subtask& subtask = plan->subtasks.at(0);
    const bool timed = subtask.tunables.count("cudnn_alternative") > 0;
    if (kernel_won) {
      EXPECT_EQ(subtask.kernel, "igemm_tf32x3_conv");
      EXPECT_FALSE(timed);
    } else {
      EXPECT_TRUE(subtask.kernel == "cudnn_conv" || timed) << subtask.kernel;
    }
  }
}

// The direct FP32 kernel (kernels/conv_direct.cuh) for convolutions of few products per output:
// automatically only timed against cuDNN at init (its model is uncalibrated: it ran at
// 0.61-0.71x of cuDNN on the 2-d shapes measured on the H200), untimed only where forced
// (STITCH_CONV_ENGINE=direct), on any track, and only where it can run them — K within
// kDirectConvMaxK, a tiling within the shared memory, not depthwise, transposed ones (by phases)
// with dilation 1; its estimates recorded as the reason.
TEST(DirectConvPlan, TakesFewChannelConvolutionsTimedOrForced) {
  auto kernel_of = [](const Result<Plan>& plan) {
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    return plan.ok() ? plan->subtasks.at(0).kernel : "";
  };
  // KernelBench level 2's 8 -> 64 channels, 3x3, 128 x 128 (K = 72).
  auto few = [&](ConvEngine engine, TensorMath math = TensorMath::fp32) {
    return single_conv_plan({128, 8, 128, 128}, {64, 8, 3, 3}, {128, 64, 126, 126}, {1, 1}, {0, 0},
                            1, with_math(math, engine));
  };
  auto automatic = few(ConvEngine::automatic);
  ASSERT_EQ(kernel_of(automatic), "direct_conv");
  EXPECT_EQ(automatic->subtasks.at(0).tunables.at("cudnn_alternative"), 1);
  EXPECT_EQ(automatic->subtasks.at(0).tunables.count("forced"), 0u);
  // On tf32 too (cuDNN's TF32 engines rated at kCudnnTf32ConvEfficiency: two layers measured),
  // timed against cuDNN, which runs in TF32 there.
  auto tf32 = few(ConvEngine::automatic, TensorMath::tf32);
  ASSERT_EQ(kernel_of(tf32), "direct_conv");
  EXPECT_EQ(tf32->subtasks.at(0).tunables.at("cudnn_alternative"), 1);
  EXPECT_EQ(subtask_tensor_math(tf32->subtasks.at(0)), TensorMath::tf32);
  // There the kernel makes one TF32 product (ConvDirectTf32): rated on the TF32 peak, faster than
  // its FP32 form, and asked before the implicit GEMM where rated faster — 16 -> 64 channels
  // (K 144) too, which the GEMM took before (its 5 K tiles mostly pipeline fill).
  const DirectConvEstimate on_tensor_cores =
      estimate_direct_conv(only_conv(*tf32), h200_peaks(), TensorMath::tf32);
  ASSERT_TRUE(on_tensor_cores.eligible);
  EXPECT_LT(on_tensor_cores.kernel_s,
            estimate_direct_conv(only_conv(*tf32), h200_peaks()).kernel_s);
  EXPECT_EQ(tf32->subtasks.at(0).tunables.at("estimate_us"),
            std::llround(on_tensor_cores.kernel_s * 1e6));
  auto sixteen = single_conv_plan({128, 16, 256, 256}, {64, 16, 3, 3}, {128, 64, 254, 254}, {1, 1},
                                  {0, 0}, 1, with_math(TensorMath::tf32));
  ASSERT_EQ(kernel_of(sixteen), "direct_conv");
  const ConvSpec sixteen_spec = only_conv(*sixteen);
  EXPECT_LT(estimate_direct_conv(sixteen_spec, h200_peaks(), TensorMath::tf32).kernel_s,
            estimate_conv_igemm(sixteen_spec, h200_peaks(), TensorMath::tf32).kernel_s);
  // A pointwise 96 -> 16 convolution (SqueezeNet's squeeze, whose input a subtask writes): the
  // tensor cores' tiling does not fit, so the kernel runs FP32 FMAs there, rated so, and still
  // takes the convolution.
  ConvSpec squeeze = only_conv(*tf32);
  squeeze.in_channels = 96, squeeze.out_channels = 16;
  squeeze.kernel = {1, 1}, squeeze.pad_before = squeeze.pad_after = {0, 0};
  squeeze.input = squeeze.output = {126, 126};
  EXPECT_TRUE(direct_conv_eligible(squeeze, TensorMath::tf32));
  EXPECT_FALSE(direct_conv_one_product(squeeze, TensorMath::tf32));
  EXPECT_TRUE(direct_conv_one_product(only_conv(*tf32), TensorMath::tf32));
  EXPECT_FALSE(direct_conv_one_product(only_conv(*tf32), TensorMath::fp32));
  EXPECT_DOUBLE_EQ(estimate_direct_conv(squeeze, h200_peaks(), TensorMath::tf32).kernel_s,
                   estimate_direct_conv(squeeze, h200_peaks()).kernel_s);
  EXPECT_EQ(conv_engine_call(squeeze, h200_peaks(), TensorMath::tf32).kernel, "direct_conv");
  auto forced = few(ConvEngine::direct);
  ASSERT_EQ(kernel_of(forced), "direct_conv");
  const Subtask& subtask = forced->subtasks.at(0);
  EXPECT_EQ(subtask.tunables.at("forced"), 1);
  EXPECT_EQ(subtask.tunables.count("cudnn_alternative"), 0u);
  const DirectConvEstimate estimate = estimate_direct_conv(only_conv(*forced), h200_peaks());
  ASSERT_TRUE(estimate.eligible);
  EXPECT_EQ(subtask.tunables.at("estimate_us"), std::llround(estimate.kernel_s * 1e6));
  EXPECT_EQ(subtask.tunables.at("cudnn_estimate_us"), std::llround(estimate.cudnn_s * 1e6));
  // Compute-bound at the two efficiencies: 18.7 GFLOP.
  EXPECT_NEAR(estimate.kernel_s / estimate.cudnn_s,
              kCudnnStrictConvEfficiency / kDirectConvEfficiency, 0.01);
  EXPECT_EQ(subtask.tunables.count("workspace_bytes"), 0u);
  EXPECT_DOUBLE_EQ(compute_peak_tflops(subtask, h200_peaks()), h200_peaks().fp32_tflops);
  // Exact FP32 on the tf32 track too, where forced.
  EXPECT_EQ(kernel_of(few(ConvEngine::direct, TensorMath::tf32)), "direct_conv");
  // Too many products per output (256 · 9 > 1024): the automatic choice instead.
  EXPECT_EQ(
      kernel_of(single_conv_plan({10, 256, 56, 56}, {256, 256, 3, 3}, {10, 256, 56, 56}, {1, 1},
                                 {1, 1}, 1, with_math(TensorMath::fp32, ConvEngine::direct))),
      "igemm_tf32x3_conv");
  // A transposed convolution runs as its phases' forward convolutions (each of at most 2 x 2
  // taps here), dilation 1 only; depthwise ones stay the depthwise kernel's.
  auto transposed = single_conv_plan({2, 3, 8, 8}, {3, 4, 3, 3}, {2, 4, 17, 17}, {2, 2}, {0, 0}, 1,
                                     with_math(TensorMath::fp32, ConvEngine::direct), true);
  EXPECT_EQ(kernel_of(transposed), "direct_conv");
  ConvSpec dilated = only_conv(*transposed);
  // Its estimate counts the taps an output takes (a quarter of the kernel's at stride 2 x 2).
  const DirectConvEstimate as_transposed = estimate_direct_conv(dilated, h200_peaks());
  dilated.transposed = false;
  EXPECT_LT(as_transposed.kernel_s, estimate_direct_conv(dilated, h200_peaks()).kernel_s);
  dilated.transposed = true;
  dilated.dilation = {2, 2};
  EXPECT_FALSE(direct_conv_eligible(dilated));
  EXPECT_EQ(
      kernel_of(single_conv_plan({10, 256, 56, 56}, {256, 1, 3, 3}, {10, 256, 56, 56}, {1, 1},
                                 {1, 1}, 256, with_math(TensorMath::fp32, ConvEngine::direct))),
      "depthwise_conv");
  // The shared-memory bound: a 1-d window dilated across 40,000 columns fits no tiling, dilated
  // 10 it does — the kernel's own plan gives the same on these shapes (conv_direct_plan_test.cu,
  // DirectConvPlan.TilesFollowTheShape).
  ConvSpec wide = only_conv(*forced);
  EXPECT_TRUE(direct_conv_eligible(wide));
  wide.input = {40100}, wide.output = {100}, wide.kernel = {5}, wide.stride = {1};
  wide.pad_before = wide.pad_after = {0}, wide.dilation = {10000};
  EXPECT_FALSE(direct_conv_eligible(wide));
  wide.dilation = {10};
  wide.output = {40060};
  EXPECT_TRUE(direct_conv_eligible(wide));
  EXPECT_EQ(enum_from_name<ConvEngine>("direct"), ConvEngine::direct);
}

TEST(ConvIgemmPlan, TheOverrideForcesEitherEngine) {
  auto cudnn = vgg_conv(with_math(TensorMath::fp32, ConvEngine::cudnn));
  ASSERT_TRUE(cudnn.ok()) << cudnn.error().message;
  EXPECT_EQ(cudnn->subtasks.at(0).kernel, "cudnn_conv");
  auto small = single_conv_plan({2, 3, 8, 8}, {4, 3, 3, 3}, {2, 4, 8, 8}, {1, 1}, {1, 1}, 1,
                                with_math(TensorMath::fp32, ConvEngine::igemm_tf32x3));
  ASSERT_TRUE(small.ok()) << small.error().message;
  EXPECT_EQ(small->subtasks.at(0).kernel, "igemm_tf32x3_conv");
  EXPECT_EQ(small->subtasks.at(0).tunables.at("forced"), 1);
  // Forced on the tf32 track too (an FP32-accurate kernel is never wrong there).
  auto tf32 = vgg_conv(with_math(TensorMath::tf32, ConvEngine::igemm_tf32x3));
  ASSERT_TRUE(tf32.ok());
  EXPECT_EQ(tf32->subtasks.at(0).kernel, "igemm_tf32x3_conv");
  EXPECT_EQ(enum_from_name<ConvEngine>("igemm_tf32x3"), ConvEngine::igemm_tf32x3);
  EXPECT_EQ(enum_name(ConvEngine::cudnn), "cudnn");
  EXPECT_FALSE(enum_from_name<ConvEngine>("fast").has_value());
}

TEST(ConvIgemmCost, ComputeBoundTimesFollowTheEfficiencies) {
  auto plan = vgg_conv(with_math(TensorMath::fp32, ConvEngine::cudnn));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const GpuPeaks h200 = h200_peaks();
  const ConvIgemmEstimate estimate = estimate_conv_igemm(only_conv(*plan), h200);
  ASSERT_TRUE(estimate.eligible);
  // M = 10·56·56 = 31360 (245 tiles exactly), N = 256 (2 tiles): 490 tiles, 4 waves over 132
  // SMs, each tile 72 K tiles of 32 (K = 256·9); 256 channels: the chunked gather, after the
  // input's transpose to channels-last.
  const double flops = 2.0 * 31360 * 256 * (256 * 9);
  EXPECT_NEAR(estimate.cudnn_s - kLaunchSeconds,
              flops / (h200.fp32_tflops * 1e12 * kCudnnStrictConvEfficiency), 1e-12);
  const double k_tile_s = 3.0 * 2 * 128 * 128 * 32 / (h200.tf32_tflops * 1e12 / h200.sms);
  const double efficiency = kConvIgemmPeakEfficiency * 72 / (72 + kConvIgemmFillTiles);
  const double transpose_s = 2.0 * 4 * (10.0 * 256 * 56 * 56) / (h200.dram_gbps * 1e9);
  EXPECT_NEAR(estimate.kernel_s - 2 * kLaunchSeconds, 4 * 72 * k_tile_s / efficiency + transpose_s,
              1e-12);
  // Without TF32 tensor cores the kernel has nothing to run on.
  GpuPeaks no_tensor_cores = h200;
  no_tensor_cores.tf32_tflops = 0;
  EXPECT_FALSE(estimate_conv_igemm(only_conv(*plan), no_tensor_cores).prefer_kernel);
}

// Channels per group neither a multiple of 4 nor padded to one (2 channels: padding would double
// K): the 4-byte gather, at kConvIgemmScalarGatherEfficiency of the chunked rate and without the
// transpose.
TEST(ConvIgemmCost, OddChannelCountsTakeTheSlowerGather) {
  auto two = single_conv_plan({16, 2, 224, 224}, {256, 2, 3, 3}, {16, 256, 224, 224}, {1, 1},
                              {1, 1}, 1, with_math(TensorMath::fp32, ConvEngine::cudnn));
  auto four = single_conv_plan({16, 4, 224, 224}, {256, 4, 3, 3}, {16, 256, 224, 224}, {1, 1},
                               {1, 1}, 1, with_math(TensorMath::fp32, ConvEngine::cudnn));
  ASSERT_TRUE(two.ok() && four.ok());
  const ConvIgemmEstimate slow = estimate_conv_igemm(only_conv(*two), h200_peaks());
  const ConvIgemmEstimate fast = estimate_conv_igemm(only_conv(*four), h200_peaks());
  // K = 18 and 36: one and two K tiles, yet the one-tile 4-byte gather takes more than twice the
  // two-tile chunked one's time (the same gather for both would make it about 0.6x).
  EXPECT_GT(slow.kernel_s, 2.0 * fast.kernel_s);
}

// One group's channels rounded up to a multiple of 4 where that adds at most a third (the kernel
// then gathers chunks from a copy of x with zero channels: conv_igemm_gather_channels, the same
// table as the kernel's ConvIgemmWgmmaGather.PadsFewChannelsToAChunk): an RGB stem's estimate is
// the 4-channel one's products plus its copy, far under the 4-byte gather's.
TEST(ConvIgemmCost, FewChannelsArePaddedToAChunk) {
  EXPECT_EQ(conv_igemm_gather_channels(8, 1, 9), 8);
  EXPECT_EQ(conv_igemm_gather_channels(16, 2, 9), 8);
  EXPECT_EQ(conv_igemm_gather_channels(3, 1, 9), 4);
  EXPECT_EQ(conv_igemm_gather_channels(6, 1, 9), 8);
  EXPECT_EQ(conv_igemm_gather_channels(7, 1, 9), 8);
  EXPECT_EQ(conv_igemm_gather_channels(9, 1, 9), 12);
  EXPECT_EQ(conv_igemm_gather_channels(1, 1, 9), 0);
  EXPECT_EQ(conv_igemm_gather_channels(2, 1, 9), 0);
  EXPECT_EQ(conv_igemm_gather_channels(5, 1, 9), 0);
  EXPECT_EQ(conv_igemm_gather_channels(6, 2, 9), 0);
  auto rgb = single_conv_plan({16, 3, 224, 224}, {256, 3, 3, 3}, {16, 256, 224, 224}, {1, 1},
                              {1, 1}, 1, with_math(TensorMath::fp32, ConvEngine::cudnn));
  auto four = single_conv_plan({16, 4, 224, 224}, {256, 4, 3, 3}, {16, 256, 224, 224}, {1, 1},
                               {1, 1}, 1, with_math(TensorMath::fp32, ConvEngine::cudnn));
  ASSERT_TRUE(rgb.ok() && four.ok());
  const ConvIgemmEstimate padded = estimate_conv_igemm(only_conv(*rgb), h200_peaks());
  const ConvIgemmEstimate chunked = estimate_conv_igemm(only_conv(*four), h200_peaks());
  // The same two K tiles; the copies write the same 4 channels, the padded one reads 3 of them.
  const double channel_s = 4.0 * (16.0 * 224 * 224) / (h200_peaks().dram_gbps * 1e9);
  EXPECT_NEAR(padded.kernel_s, chunked.kernel_s - channel_s, 1e-9);
  // AlexNet's first layer (3 -> 64, 11x11 stride 4, batch 1024): padded, the kernel is
  // preferred or timed against cuDNN (on the 4-byte gather it was only level with cuDNN).
  auto alexnet = single_conv_plan({1024, 3, 224, 224}, {96, 3, 11, 11}, {1024, 96, 55, 55}, {4, 4},
                                  {2, 2}, 1, with_math(TensorMath::fp32));
  ASSERT_TRUE(alexnet.ok()) << alexnet.error().message;
  EXPECT_EQ(alexnet->subtasks.at(0).kernel, "igemm_tf32x3_conv");
}

// At most 64 output channels: the kernel's 64-wide tiles, each K tile half the products at
// kConvIgemmNarrowEfficiency of the wide rate; the level-2 shape measured 1.14x faster than strict
// cuDNN on the H200 (6.30 vs 7.21 ms, 2026-12-04) takes the kernel.
TEST(ConvIgemmCost, NarrowConvolutionsTakeTheNarrowTile) {
  auto narrow = single_conv_plan({64, 64, 256, 256}, {64, 64, 3, 3}, {64, 64, 254, 254}, {1, 1},
                                 {0, 0}, 1, with_math(TensorMath::fp32, ConvEngine::cudnn));
  ASSERT_TRUE(narrow.ok()) << narrow.error().message;
  const GpuPeaks h200 = h200_peaks();
  const ConvIgemmEstimate estimate = estimate_conv_igemm(only_conv(*narrow), h200);
  ASSERT_TRUE(estimate.eligible);
  // x read by TMA boxes of 128 x 1 positions: two a row of 254, 64·254·2 = 32512 tiles, one
  // 64-wide tile column: 247 waves over 132 SMs of 18 K tiles (K = 64·9) each; no copy of x.
  const double k_tile_s = 3.0 * 2 * 128 * 64 * 32 / (h200.tf32_tflops * 1e12 / h200.sms);
  const double efficiency =
      kConvIgemmPeakEfficiency * 18 / (18 + kConvIgemmFillTiles) * kConvIgemmNarrowEfficiency;
  EXPECT_EQ(conv_igemm_box_tiles(only_conv(*narrow)), 32512);
  EXPECT_NEAR(estimate.kernel_s - kLaunchSeconds,
              std::ceil(32512.0 / 132) * 18 * k_tile_s / efficiency, 1e-12);
  EXPECT_TRUE(estimate.prefer_kernel);
}

// Where the kernel reads an NCHW x by TMA boxes (kernels/conv_igemm_box_tma.cuh, mirrored):
// one group, stride 1, rows of x a multiple of 4 floats, channels padding to 32 by at most a
// third, boxes at most an eighth past the output, no prologue; the tiles count the boxes.
TEST(ConvIgemmCost, BoxesReadAnNchwInputWithoutACopy) {
  auto box_tiles = [](std::vector<int64_t> x, std::vector<int64_t> w, std::vector<int64_t> y,
                      std::vector<int64_t> stride, std::vector<int64_t> pad, int64_t groups = 1) {
    auto plan = single_conv_plan(x, w, y, stride, pad, groups,
                                 with_math(TensorMath::fp32, ConvEngine::igemm_tf32x3));
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    return plan.ok() ? conv_igemm_box_tiles(only_conv(*plan)) : int64_t{-1};
  };
  // 128 images of 126 x 126 outputs: one 128 x 1 box a row.
  EXPECT_EQ(box_tiles({128, 64, 128, 128}, {128, 64, 3, 3}, {128, 128, 126, 126}, {1, 1}, {0, 0}),
            128 * 126);
  // 60 x 36 outputs: 64 x 2 boxes (6.7% past the output), 18 an image.
  EXPECT_EQ(box_tiles({2, 32, 36, 60}, {16, 32, 3, 3}, {2, 16, 36, 60}, {1, 1}, {1, 1}), 2 * 18);
  // 56 x 56 in 64 x 2 boxes: 14% past the output — the copy.
  EXPECT_EQ(box_tiles({8, 64, 56, 56}, {128, 64, 3, 3}, {8, 128, 56, 56}, {1, 1}, {1, 1}), 0);
  EXPECT_EQ(box_tiles({2, 64, 64, 64}, {32, 64, 3, 3}, {2, 32, 32, 32}, {2, 2}, {1, 1}), 0);
  EXPECT_EQ(box_tiles({2, 16, 64, 64}, {32, 16, 3, 3}, {2, 32, 64, 64}, {1, 1}, {1, 1}), 0);
  EXPECT_EQ(box_tiles({2, 64, 64, 62}, {32, 64, 3, 3}, {2, 32, 64, 62}, {1, 1}, {1, 1}), 0);
  EXPECT_EQ(box_tiles({2, 64, 64, 64}, {64, 32, 3, 3}, {2, 64, 64, 64}, {1, 1}, {1, 1}, 2), 0);
}

// The engine call between the project's kernels and cuDNN (conv_engine_call): untimed where the
// model is confident, the kernel with cuDNN timed against it at init inside the model's error
// band, cuDNN where the kernels are rated well behind or the convolution is too small to time.
TEST(TimedConvEngine, TheModelsCallByTheRatioOfItsEstimates) {
  auto subtask_of = [](const Result<Plan>& plan) -> const Subtask& {
    EXPECT_TRUE(plan.ok()) << plan.error().message;
    return plan->subtasks.at(0);
  };
  auto timed = [](const Subtask& subtask) {
    return subtask.tunables.count("cudnn_alternative") > 0;
  };
  const PlanOptions fp32 = with_math(TensorMath::fp32);
  // VGG16's conv3 (measured 1.4x faster on the kernel): confident.
  auto vgg = vgg_conv(fp32);
  EXPECT_EQ(subtask_of(vgg).kernel, "igemm_tf32x3_conv");
  EXPECT_FALSE(timed(subtask_of(vgg)));
  // Level 2's 8 -> 64 channels, K = 72: the implicit GEMM rated behind cuDNN, the direct kernel
  // within the band.
  auto few = single_conv_plan({128, 8, 128, 128}, {64, 8, 3, 3}, {128, 64, 126, 126}, {1, 1},
                              {0, 0}, 1, fp32);
  EXPECT_EQ(subtask_of(few).kernel, "direct_conv");
  EXPECT_TRUE(timed(subtask_of(few)));
  const ConvSpec& spec = only_conv(*few);
  const ConvEngineCall call = conv_engine_call(spec, h200_peaks());
  EXPECT_TRUE(call.timed);
  EXPECT_GT(estimate_conv_igemm(spec, h200_peaks()).kernel_s, kTimedEngineRatio * call.cudnn_s);
  EXPECT_LE(call.kernel_s, kTimedEngineRatio * call.cudnn_s);
  EXPECT_EQ(subtask_of(few).tunables.at("estimate_us"), std::llround(call.kernel_s * 1e6));
  // Too small to be worth timing: cuDNN.
  auto tiny = single_conv_plan({2, 3, 8, 8}, {4, 3, 3, 3}, {2, 4, 8, 8}, {1, 1}, {1, 1}, 1, fp32);
  EXPECT_EQ(subtask_of(tiny).kernel, "cudnn_conv");
  EXPECT_LT(estimate_conv_igemm(only_conv(*tiny), h200_peaks()).cudnn_s, kTimedEngineMinSeconds);
  // --strict-fp32-gemm, or no tensor cores: cuDNN, untimed.
  PlanOptions strict = fp32;
  strict.allow_tf32x3 = false;
  auto no_split = single_conv_plan({128, 8, 128, 128}, {64, 8, 3, 3}, {128, 64, 126, 126}, {1, 1},
                                   {0, 0}, 1, strict);
  EXPECT_EQ(subtask_of(no_split).kernel, "cudnn_conv");
  GpuPeaks no_tensor_cores = h200_peaks();
  no_tensor_cores.tf32_tflops = 0;
  EXPECT_TRUE(conv_engine_call(spec, no_tensor_cores).kernel.empty());
  // A channels-last x (layout.h) cuDNN cannot read: never timed.
  ConvSpec last = spec;
  last.x = channels_last_access(spec.x.base, spec.x.shape);
  EXPECT_FALSE(conv_engine_call(last, h200_peaks()).timed);
}

// DenseNet201's 7x7 layers (490 positions x 32 channels, K = 9216): cuDNN's grid a few tiles, so
// its model has no ground; the band widens and the floor drops, and the program times the two.
TEST(TimedConvEngine, AnUnderfilledCudnnGridIsTimedInAWiderBand) {
  auto plan = single_conv_plan({10, 1024, 7, 7}, {32, 1024, 3, 3}, {10, 32, 7, 7}, {1, 1}, {1, 1},
                               1, with_math(TensorMath::fp32));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const ConvSpec& spec = only_conv(*plan);
  EXPECT_TRUE(cudnn_grid_underfilled(spec, h200_peaks()));
  const ConvEngineCall call = conv_engine_call(spec, h200_peaks());
  EXPECT_LT(call.cudnn_s, kTimedEngineMinSeconds);  // too short to time on a full grid's model
  EXPECT_GE(call.cudnn_s, kUnderfilledMinSeconds);
  EXPECT_EQ(plan->subtasks.at(0).kernel, "igemm_tf32x3_conv");
  EXPECT_EQ(plan->subtasks.at(0).tunables.count("cudnn_alternative"), 1u);
  EXPECT_LE(call.kernel_s, kUnderfilledTimedRatio * call.cudnn_s);
  // A full grid (VGG16's conv3, 10 x 56 x 56 positions) keeps the usual band.
  auto vgg = vgg_conv(with_math(TensorMath::fp32));
  ASSERT_TRUE(vgg.ok()) << vgg.error().message;
  EXPECT_FALSE(cudnn_grid_underfilled(only_conv(*vgg), h200_peaks()));
  // Under the lower floor still: cuDNN, untimed.
  auto tiny = single_conv_plan({2, 3, 8, 8}, {4, 3, 3, 3}, {2, 4, 8, 8}, {1, 1}, {1, 1}, 1,
                               with_math(TensorMath::fp32));
  ASSERT_TRUE(tiny.ok()) << tiny.error().message;
  EXPECT_TRUE(cudnn_grid_underfilled(only_conv(*tiny), h200_peaks()));
  EXPECT_EQ(tiny->subtasks.at(0).kernel, "cudnn_conv");
}

// Beside cuDNN's alternative a chain folds whole: as the kernel epilogue where it is one
// (bias + ReLU), else as the direct kernel's output transform, cuDNN's side then transforming its
// own output. With no alternative (the direct kernel forced) the head is the kernel epilogue and
// the rest the output transform.
TEST(TimedConvEngine, BesideTheAlternativeAChainFoldsWhole) {
  auto plan_chain = [](Op activation, ConvEngine engine) {
    GraphBuilder b;
    auto x = b.input("x", {128, 8, 128, 128});
    auto w = b.param("w", {64, 8, 3, 3});
    auto bias = b.param("bias", {64});
    auto c = conv(b, "c", x, w, bias, {128, 64, 126, 126}, {1, 1}, {0, 0});
    b.output(b.node("a", activation, {ref(c)}, {128, 64, 126, 126}));
    return make_plan(b.graph(), with_math(TensorMath::fp32, engine));
  };
  auto relu = plan_chain(Op::relu, ConvEngine::automatic);
  ASSERT_TRUE(relu.ok()) << relu.error().message;
  ASSERT_EQ(relu->subtasks.at(0).tunables.count("cudnn_alternative"), 1u);
  EXPECT_EQ(only_conv(*relu).kernel_epilogue, "bias_relu");
  EXPECT_FALSE(only_conv(*relu).epilogue.has_value());
  EXPECT_FALSE(only_conv(*relu).output_transform.has_value());
  auto tanh = plan_chain(Op::tanh, ConvEngine::automatic);
  ASSERT_TRUE(tanh.ok()) << tanh.error().message;
  ASSERT_EQ(tanh->subtasks.at(0).tunables.count("cudnn_alternative"), 1u);
  EXPECT_EQ(only_conv(*tanh).kernel_epilogue, "none");
  EXPECT_FALSE(only_conv(*tanh).epilogue.has_value());
  ASSERT_TRUE(only_conv(*tanh).output_transform.has_value());
  EXPECT_EQ(only_conv(*tanh).output_transform->steps.size(), 2u);  // bias add, tanh
  EXPECT_TRUE(check_plan(*tanh).ok());
  auto forced = plan_chain(Op::tanh, ConvEngine::direct);
  ASSERT_TRUE(forced.ok()) << forced.error().message;
  EXPECT_EQ(only_conv(*forced).kernel_epilogue, "bias");
  EXPECT_FALSE(only_conv(*forced).epilogue.has_value());
  ASSERT_TRUE(only_conv(*forced).output_transform.has_value());
  EXPECT_EQ(only_conv(*forced).output_transform->steps.size(), 1u);  // tanh
}

// Beside cuDNN's alternative a bias + ReLU stored into a cat's window (SqueezeNet's expand
// convolutions) folds too: the kernel writes the window through its output map, cuDNN through
// its image stride, its epilogue pass then in place over the window.
TEST(TimedConvEngine, BesideTheAlternativeAChainIntoACatWindowFolds) {
  GraphBuilder b;
  const std::vector<int64_t> out = {128, 64, 126, 126};
  auto x = b.input("x", {128, 8, 128, 128});
  auto w = b.param("w", {64, 8, 3, 3});
  auto bias = b.param("bias", {64});
  auto c = conv(b, "c", x, w, bias, out, {1, 1}, {0, 0});
  auto relu = b.node("a", Op::relu, {ref(c)}, out);
  auto other = b.input("other", out);
  auto doubled = b.node("d", Op::mul_tensor, {ref(other), num(2)}, out);
  b.output(b.node("joined", Op::cat, {list({doubled, relu}), integer(1)}, {128, 128, 126, 126}));
  auto plan = make_plan(b.graph(), with_math(TensorMath::fp32));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const Subtask* subtask = nullptr;
  for (const Subtask& s : plan->subtasks)
    if (std::holds_alternative<ConvSpec>(s.spec)) subtask = &s;
  ASSERT_NE(subtask, nullptr);
  ASSERT_EQ(subtask->tunables.count("cudnn_alternative"), 1u);
  const ConvSpec& spec = std::get<ConvSpec>(subtask->spec);
  EXPECT_EQ(spec.kernel_epilogue, "bias_relu");
  EXPECT_FALSE(spec.epilogue.has_value());
  ASSERT_EQ(spec.stores.size(), 1u);
  const Access& window = plan->values.at(plan->graph.name_of(spec.stores[0].value));
  EXPECT_EQ(plan->graph.name_of(window.base), "joined");
  EXPECT_TRUE(is_dense_per_image(window));
  EXPECT_TRUE(check_plan(*plan).ok());
}

// plan_check holds cuDNN's alternative to what cuDNN can run: the project's kernel beside it, a
// dense x, a dense output of its own — on any track (TF32 engines under the tf32 tensor_math).
TEST(TimedConvEngine, PlanCheckHoldsTheAlternativeToADenseConvolution) {
  auto plan = single_conv_plan({128, 8, 128, 128}, {64, 8, 3, 3}, {128, 64, 126, 126}, {1, 1},
                               {0, 0}, 1, with_math(TensorMath::fp32));
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.at(0).tunables.count("cudnn_alternative"), 1u);
  EXPECT_TRUE(check_plan(*plan).ok());
  auto expect_refused = [](const Plan& broken, const char* why) {
    const Status status = check_plan(broken);
    ASSERT_FALSE(status.ok()) << why;
    EXPECT_NE(status.error().message.find(why), std::string::npos) << status.error().message;
  };
  Plan on_cudnn = *plan;
  on_cudnn.subtasks[0].kernel = "cudnn_conv";
  expect_refused(on_cudnn, "only against the project's convolution kernels");
  Plan tf32 = *plan;
  tf32.subtasks[0].tunables["tensor_math"] = static_cast<int64_t>(TensorMath::tf32);
  EXPECT_TRUE(check_plan(tf32).ok());
  // cuDNN writes a dense output of its own, NCHW or channels-last (plan/layout.h:
  // ChannelsLast.ConvolutionsTimedAgainstCudnnShareTheRegion), not another order (here H and W
  // swapped).
  Plan strided = *plan;
  const ConvSpec& spec = only_conv(strided);
  const std::string out = strided.graph.name_of(spec.stores[0].value);
  Access swapped = contiguous_access(spec.stores[0].value, strided.values[out].shape);
  const std::vector<int64_t> shape = swapped.shape;
  swapped.strides = {shape[1] * shape[2] * shape[3], shape[2] * shape[3], 1, shape[2]};
  strided.values[out] = swapped;
  expect_refused(strided, "writes a dense output of its own");
}

}  // namespace
}  // namespace stitch::plan
