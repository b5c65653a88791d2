// Values stored channels-last between the project's convolution kernels and pools (plan/layout.h):
// the chain that qualifies, each reason a value stays NCHW, the time model's transpose, and the
// plan's invariants on a channels-last x.
#include <gtest/gtest.h>

#include "plan/access.h"
#include "plan/kernel_choice.h"
#include "plan/plan_check.h"
#include "plan/plan_json.h"
#include "plan/planner.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

// A 2-d convolution with a bias, padding 1 (3x3) or 0 (1x1), of `x` [2, in, size, size].
ir::ValueRef conv(GraphBuilder& b, const std::string& name, const ir::ValueRef& x, int64_t in,
                  int64_t out, int64_t kernel = 3, int64_t size = 6) {
  auto w = b.param(name + "_w", {out, in, kernel, kernel});
  auto bias = b.param(name + "_b", {out});
  const int64_t pad = kernel / 2;
  return b.node(name, Op::convolution,
                {ref(x), ref(w), ref(bias), ints({1, 1}), ints({pad, pad}), ints({1, 1}),
                 flag(false), ints({0, 0}), integer(1)},
                {2, out, size, size});
}

// AlexNet's MaxPool2d(3, stride=2) of `x` [2, channels, 6, 6]: [2, channels, 2, 2]. (A pool whose
// windows tile its input is a reduction instead: plan/lower_pooling.cc.)
ir::ValueRef max_pool(GraphBuilder& b, const std::string& name, const ir::ValueRef& x) {
  const int64_t channels = b.graph().type_of(x).shape[1];
  auto pool = b.multi(name, Op::max_pool2d_with_indices,
                      {ref(x), ints({3, 3}), ints({2, 2}), ints({0, 0}), ints({1, 1}), flag(false)},
                      {{2, channels, 2, 2}, {2, channels, 2, 2}});
  b.graph().nodes.back().outputs[1].dtype = ir::DType::int64;
  return pool;
}

ir::ValueRef relu(GraphBuilder& b, const std::string& name, const ir::ValueRef& x) {
  return b.node(name, Op::relu, {ref(x)}, b.graph().type_of(x).shape);
}

// x [2, 8, 6, 6] -> conv + bias + ReLU "r1" [2, `mid`, 6, 6] -> conv + bias + ReLU "r2"
// [2, 16, 6, 6], the graph's output; returns r1.
ir::ValueRef vgg_pair(GraphBuilder& b, int64_t mid = 16) {
  auto x = b.input("x", {2, 8, 6, 6});
  auto r1 = relu(b, "r1", conv(b, "c1", x, 8, mid));
  b.output(relu(b, "r2", conv(b, "c2", r1, mid, 16)));
  return r1;
}

Result<Plan> plan_on(GraphBuilder& b, ConvEngine engine = ConvEngine::igemm_tf32x3) {
  PlanOptions options;
  options.conv_engine = engine;
  return make_plan(b.graph(), options);
}

const Access& value_of(const Plan& plan, const std::string& name) {
  return plan.values.at(name);
}

// The convolution subtask whose node is named `name`.
const ConvSpec& conv_named(const Plan& plan, const std::string& name) {
  for (const Subtask& subtask : plan.subtasks)
    if (const auto* spec = std::get_if<ConvSpec>(&subtask.spec);
        spec && plan.graph.nodes[spec->node].id == name)
      return *spec;
  ADD_FAILURE() << "no convolution " << name;
  static const ConvSpec none;
  return none;
}

TEST(ChannelsLastAccess, PutsTheChannelsInnermost) {
  const ir::ValueRef v{ir::ValueRef::Kind::node, 0, 0};
  EXPECT_EQ(channels_last_access(v, {2, 3, 4, 5}).strides, (std::vector<int64_t>{60, 1, 15, 3}));
  EXPECT_EQ(channels_last_access(v, {2, 3, 7}).strides, (std::vector<int64_t>{21, 1, 3}));
  EXPECT_EQ(channels_last_access(v, {2, 3, 4, 5, 6}).strides,
            (std::vector<int64_t>{360, 1, 90, 18, 3}));
  EXPECT_TRUE(is_channels_last(channels_last_access(v, {2, 3, 4, 5})));
  EXPECT_FALSE(is_channels_last(contiguous_access(v, {2, 3, 4, 5})));
  // One channel: both orders are the same memory.
  EXPECT_TRUE(is_channels_last(contiguous_access(v, {2, 1, 4, 5})));
  Access shifted = channels_last_access(v, {2, 3, 4, 5});
  shifted.offset = 4;
  EXPECT_FALSE(is_channels_last(shifted));
  EXPECT_FALSE(is_channels_last(contiguous_access(v, {3, 4})));
  // A value's own buffer channels-last: not another value's, not NCHW.
  const ir::ValueRef other{ir::ValueRef::Kind::node, 1, 0};
  EXPECT_TRUE(is_own_channels_last(channels_last_access(v, {2, 3, 4, 5}), v));
  EXPECT_FALSE(is_own_channels_last(channels_last_access(other, {2, 3, 4, 5}), v));
  EXPECT_FALSE(is_own_channels_last(contiguous_access(v, {2, 3, 4, 5}), v));
}

// VGG's pair: the first kernel writes r1 NHWC, the second gathers it as it is; r2, the graph's
// output, stays NCHW; the plan holds its invariants and round-trips through plan.json.
TEST(ChannelsLast, ConvolutionChainStoresItsLinkChannelsLast) {
  GraphBuilder b;
  vgg_pair(b);
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const Access& r1 = value_of(*plan, "r1");
  EXPECT_EQ(r1.strides, (std::vector<int64_t>{576, 1, 96, 16}));
  EXPECT_EQ(plan->graph.name_of(r1.base), "r1");
  EXPECT_TRUE(value_of(*plan, "r2").is_contiguous());
  const ConvSpec& c1 = conv_named(*plan, "c1");
  EXPECT_EQ(c1.kernel_epilogue, "bias_relu");
  EXPECT_FALSE(c1.epilogue.has_value());
  EXPECT_TRUE(c1.x.is_contiguous());
  const ConvSpec& c2 = conv_named(*plan, "c2");
  EXPECT_EQ(c2.x, r1);
  for (const Subtask& subtask : plan->subtasks)
    EXPECT_EQ(subtask.kernel, "igemm_tf32x3_conv");
  EXPECT_TRUE(check_plan(*plan).ok());
  auto parsed = parse_plan(serialize_plan(*plan));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(*parsed == *plan);
}

// 1-d convolutions (NLC) too.
TEST(ChannelsLast, OneDimensionalChainGoesNlc) {
  GraphBuilder b;
  auto x = b.input("x", {2, 8, 10});
  auto conv1d = [&](const std::string& name, const ir::ValueRef& in, int64_t from, int64_t to) {
    auto w = b.param(name + "_w", {to, from, 3});
    auto bias = b.param(name + "_b", {to});
    return b.node(name, Op::convolution,
                  {ref(in), ref(w), ref(bias), ints({1}), ints({1}), ints({1}), flag(false),
                   ints({0}), integer(1)},
                  {2, to, 10});
  };
  auto r1 = relu(b, "r1", conv1d("c1", x, 8, 12));
  b.output(relu(b, "r2", conv1d("c2", r1, 12, 4)));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(value_of(*plan, "r1").strides, (std::vector<int64_t>{120, 1, 12}));
}

// Each reason the link stays NCHW; the same pair without it goes channels-last (above).
TEST(ChannelsLast, AGraphOutputStaysNchw) {
  GraphBuilder b;
  b.output(vgg_pair(b));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(value_of(*plan, "r1").is_contiguous());
}

TEST(ChannelsLast, AValueAPassAlsoReadsStaysNchw) {
  GraphBuilder b;
  auto x = b.input("x", {2, 8, 6, 6});
  auto r1 = relu(b, "r1", conv(b, "c1", x, 8, 16));
  auto r2 = relu(b, "r2", conv(b, "c2", r1, 16, 16));
  b.output(b.node("sum", Op::add_tensor, {ref(r2), ref(r1)}, {2, 16, 6, 6}));  // a residual
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(value_of(*plan, "r1").is_contiguous());
}

TEST(ChannelsLast, ChannelsNotAMultipleOfFourStayNchw) {
  GraphBuilder b;
  vgg_pair(b, 6);  // the wgmma gather's 16-byte chunks need 4 channels per group
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(value_of(*plan, "r1").is_contiguous());
}

TEST(ChannelsLast, CudnnConvolutionsStayNchw) {
  GraphBuilder b;
  vgg_pair(b);
  auto plan = plan_on(b, ConvEngine::cudnn);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(value_of(*plan, "r1").is_contiguous());
}

// The tf32 track times cuDNN's TF32 engines against the kernel at init (cudnn_alternative): the
// region holds all the same, cuDNN given the channels-last x and y (kernels/conv.cuh).
PlanOptions tf32_track() {
  PlanOptions options;
  options.tensor_math = TensorMath::tf32;
  return options;
}

bool timed(const Plan& plan, const std::string& name) {
  for (const Subtask& subtask : plan.subtasks)
    if (const auto* spec = std::get_if<ConvSpec>(&subtask.spec);
        spec && plan.graph.nodes[spec->node].id == name)
      return subtask.tunables.count("cudnn_alternative") > 0;
  return false;
}

TEST(ChannelsLast, ConvolutionsTimedAgainstCudnnShareTheRegion) {
  GraphBuilder b;
  auto x = b.input("x", {2, 128, 112, 112});
  auto r1 = relu(b, "r1", conv(b, "c1", x, 128, 128, 3, 112));
  b.output(relu(b, "r2", conv(b, "c2", r1, 128, 128, 3, 112)));
  auto plan = make_plan(b.graph(), tf32_track());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(timed(*plan, "c1") && timed(*plan, "c2"));  // the premise
  EXPECT_TRUE(is_channels_last(value_of(*plan, "r1")));
  EXPECT_FALSE(value_of(*plan, "r1").is_contiguous());
  EXPECT_EQ(conv_named(*plan, "c1").kernel_epilogue, "bias_relu");
  EXPECT_EQ(conv_named(*plan, "c2").x, value_of(*plan, "r1"));
  EXPECT_TRUE(check_plan(*plan).ok()) << check_plan(*plan).error().message;
}

// On the fp32 track cuDNN's strict engines include NCHW-only ones (Winograd, FFT): a convolution
// timed against them stays NCHW (kernel_choice.h's cudnn_takes_channels_last), where the same
// chain on tf32 goes channels-last. Here the producer is the direct kernel, timed on both tracks.
TEST(ChannelsLast, TheFp32TracksTimedConvolutionsStayNchw) {
  for (TensorMath math : {TensorMath::fp32, TensorMath::tf32}) {
    GraphBuilder b;
    auto conv16 = [&](const std::string& name, const ir::ValueRef& in, int64_t from) {
      auto w = b.param(name + "_w", {64, from, 3, 3});
      auto bias = b.param(name + "_b", {64});
      return b.node(name, Op::convolution,
                    {ref(in), ref(w), ref(bias), ints({1, 1}), ints({1, 1}), ints({1, 1}),
                     flag(false), ints({0, 0}), integer(1)},
                    {16, 64, 128, 128});
    };
    auto r1 = relu(b, "r1", conv16("c1", b.input("x", {16, 8, 128, 128}), 8));
    b.output(relu(b, "r2", conv16("c2", r1, 64)));
    PlanOptions options;
    options.tensor_math = math;
    auto plan = make_plan(b.graph(), options);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_TRUE(timed(*plan, "c1")) << tensor_math_name(static_cast<int64_t>(math));
    EXPECT_EQ(is_channels_last(value_of(*plan, "r1")), math != TensorMath::fp32)
        << tensor_math_name(static_cast<int64_t>(math));
    EXPECT_TRUE(check_plan(*plan).ok());
  }
}

// Timed against cuDNN, a producer with an output transform stays NCHW: its pass after cuDNN
// reads NCHW planes (the same graph goes channels-last where the kernel alone runs:
// AnOutputTransformsResultGoesChannelsLast below).
TEST(ChannelsLast, ATimedProducersOutputTransformStaysNchw) {
  GraphBuilder b;
  auto x = b.input("x", {2, 128, 112, 112});
  auto t1 = b.node("t1", Op::tanh, {ref(conv(b, "c1", x, 128, 128, 3, 112))},
                   {2, 128, 112, 112});
  b.output(relu(b, "r2", conv(b, "c2", t1, 128, 128, 3, 112)));
  auto plan = make_plan(b.graph(), tf32_track());
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(timed(*plan, "c1"));
  ASSERT_TRUE(conv_named(*plan, "c1").output_transform.has_value());
  EXPECT_TRUE(value_of(*plan, "t1").is_contiguous());
}

// An epilogue pass (here: a product with another tensor, not an output transform) reads the
// producer's result back NCHW.
TEST(ChannelsLast, AnEpiloguePassLeftAfterTheProducerStaysNchw) {
  GraphBuilder b;
  auto x = b.input("x", {2, 8, 6, 6});
  auto scale = b.input("scale", {2, 16, 6, 6});
  auto t1 = b.node("t1", Op::mul_tensor, {ref(conv(b, "c1", x, 8, 16)), ref(scale)}, {2, 16, 6, 6});
  b.output(relu(b, "r2", conv(b, "c2", t1, 16, 16)));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(value_of(*plan, "t1").is_contiguous());
  EXPECT_TRUE(conv_named(*plan, "c1").epilogue.has_value());
}

// An output transform (bias + tanh, applied as the kernel stores) leaves no pass: its result
// goes channels-last like a kernel epilogue's.
TEST(ChannelsLast, AnOutputTransformsResultGoesChannelsLast) {
  GraphBuilder b;
  auto x = b.input("x", {2, 8, 6, 6});
  auto t1 = b.node("t1", Op::tanh, {ref(conv(b, "c1", x, 8, 16))}, {2, 16, 6, 6});
  b.output(relu(b, "r2", conv(b, "c2", t1, 16, 16)));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(is_channels_last(value_of(*plan, "t1")));
  const ConvSpec& c1 = conv_named(*plan, "c1");
  EXPECT_FALSE(c1.epilogue.has_value());
  ASSERT_TRUE(c1.output_transform.has_value());
  EXPECT_EQ(c1.output_transform->loads[0], value_of(*plan, "t1"));
  EXPECT_TRUE(check_plan(*plan).ok());
}

// AlexNet's block boundary: conv + ReLU, a max pool, conv + ReLU. The pool reads r1 and writes its
// result channels-last, taking its outputs channels fastest; the second convolution gathers the
// pool's result as it is.
TEST(ChannelsLast, APoolBetweenConvolutionsStaysInTheRegion) {
  GraphBuilder b;
  auto x = b.input("x", {2, 8, 6, 6});
  auto r1 = relu(b, "r1", conv(b, "c1", x, 8, 16));
  auto pooled = max_pool(b, "pool", r1);
  b.output(relu(b, "r2", conv(b, "c2", pooled, 16, 16, 3, 2)));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(is_channels_last(value_of(*plan, "r1")));
  EXPECT_FALSE(value_of(*plan, "r1").is_contiguous());
  const Access& pool_result = value_of(*plan, "pool");
  EXPECT_EQ(pool_result.strides, (std::vector<int64_t>{64, 1, 32, 16}));
  const PoolSpec* pool = nullptr;
  for (const Subtask& subtask : plan->subtasks)
    if (const auto* spec = std::get_if<PoolSpec>(&subtask.spec)) pool = spec;
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(pool->input, value_of(*plan, "r1"));
  ASSERT_EQ(pool->stores.size(), 1u);
  EXPECT_EQ(conv_named(*plan, "c2").x, pool_result);
  EXPECT_TRUE(value_of(*plan, "r2").is_contiguous());
  EXPECT_TRUE(check_plan(*plan).ok());
  auto parsed = parse_plan(serialize_plan(*plan));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_TRUE(*parsed == *plan);
}

// A pool whose result no gather reads (here: the graph's output) gives its input nothing to
// save: both stay NCHW. And a pool of an NCHW value (the graph's input) writes NCHW, though a
// gather reads its result.
TEST(ChannelsLast, APoolLinksOnlyChannelsLastValues) {
  GraphBuilder b;
  auto x = b.input("x", {2, 8, 6, 6});
  auto r1 = relu(b, "r1", conv(b, "c1", x, 8, 16));
  b.output(max_pool(b, "pool", r1));
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(value_of(*plan, "r1").is_contiguous());

  GraphBuilder input_pooled;
  auto y = input_pooled.input("y", {2, 8, 6, 6});
  auto pooled = max_pool(input_pooled, "pool", y);
  input_pooled.output(relu(input_pooled, "r", conv(input_pooled, "c", pooled, 8, 16, 3, 2)));
  plan = plan_on(input_pooled);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_TRUE(value_of(*plan, "pool").is_contiguous());
}

// The time model: a channels-last x saves the reader's per-run transpose, two passes over x.
TEST(ChannelsLast, TheEstimateDropsTheReadersTranspose) {
  GraphBuilder b;
  vgg_pair(b);
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ConvSpec last = conv_named(*plan, "c2");
  ConvSpec dense = last;
  dense.x = contiguous_access(last.x.base, last.x.shape);
  const GpuPeaks& peaks = plan->peaks;
  const double saved_s =
      estimate_conv_igemm(dense, peaks).kernel_s - estimate_conv_igemm(last, peaks).kernel_s;
  const double x_bytes = 4.0 * 2 * 16 * 6 * 6;
  EXPECT_NEAR(saved_s, 2.0 * x_bytes / (peaks.dram_gbps * 1e9) + kLaunchSeconds, 1e-12);
  // Channels the chunked gather cannot take (5: not padded to 8): the kernel transposes a
  // channels-last x back.
  last.in_channels = dense.in_channels = 5;
  EXPECT_GT(estimate_conv_igemm(last, peaks).kernel_s, estimate_conv_igemm(dense, peaks).kernel_s);
}

// Only a forward convolution reads a channels-last x; the direct kernel never does.
TEST(ChannelsLast, OnlyTheForwardImplicitGemmTakesAChannelsLastX) {
  GraphBuilder b;
  vgg_pair(b);
  auto plan = plan_on(b);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ConvSpec c2 = conv_named(*plan, "c2");
  EXPECT_TRUE(conv_igemm_eligible(c2));
  EXPECT_FALSE(direct_conv_eligible(c2));
  c2.transposed = true;
  EXPECT_FALSE(conv_igemm_eligible(c2));
  for (Subtask& subtask : plan->subtasks)
    if (auto* spec = std::get_if<ConvSpec>(&subtask.spec); spec && !spec->x.is_contiguous())
      spec->transposed = true;
  const Status broken = check_plan(*plan);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("contiguous, (forward) channels-last"), std::string::npos)
      << broken.error().message;
}

}  // namespace
}  // namespace stitch::plan
