// The direct convolution (kernels/conv_direct.cuh) without a GPU (label unit): whole launches
// emulated on the CPU block by block and thread by thread — the kernel's own weight and patch
// copies, then every thread's compute per row step in the kernel's order (the next step's patch
// copied first where there are two buffers), shared memory poisoned with NaN and y too —
// give exactly the FP32 fmaf sum of each output's K products in (channel, kd, kh, kw) order with
// the epilogue, over the shape table of conv_igemm_cases.cuh (the ones within the kernel's K) and
// shapes of few input channels as KernelBench's level 2 has them; through an output map, the
// outputs land where it says and nothing else is touched; an output transform applies per plane;
// a channel reduction combines each position's channels in the kernel's order. Plus the plan's
// choices and refusals.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv_direct_cases.cuh"
#include "conv_transpose_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_direct.cuh"

namespace stitch::kernels {
namespace {

using detail::DirectConvParams;
using testing::ConvIgemmCase;
using testing::few_channel_cases;
using testing::k_order_reference;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

class DirectConvEmulation : public ::testing::TestWithParam<ConvIgemmCase> {};

TEST_P(DirectConvEmulation, GivesTheKOrderSumExactly) {
  const ConvIgemmCase& c = GetParam();
  const ConvIgemmShape& s = c.shape;
  DirectConvParams p;
  const std::string problem = detail::plan_direct_conv(s, 4, p);
  if (testing::conv_weight_elements(s) / s.out_channels > detail::kDirectConvMaxK) {
    EXPECT_NE(problem.find("products per output"), std::string::npos) << problem;
    return;
  }
  ASSERT_EQ(problem, "") << c.name;
  EXPECT_LE(p.shared_bytes(), detail::kDirectConvSharedBytes);
  EXPECT_GE(p.chunks * p.chunk_channels(), s.out_channels / s.groups);
  EXPECT_GE(int64_t{p.col_tiles} * p.tile_cols(), p.out[2]);
  EXPECT_GE(int64_t{p.row_tiles} * p.warp_rows * p.row_steps, p.out[1]);
  p.epilogue = c.epilogue;
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 41, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 42, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 43, -1.f, 1.f);
  std::vector<float> y(testing::conv_output_elements(s), kNaN);
  testing::emulate_direct_conv(p, x, w, bias, y);
  EXPECT_TRUE(testing::bitwise_equal(y, k_order_reference(s, c.epilogue, x, w, bias))) << c.name;
}

INSTANTIATE_TEST_SUITE_P(IgemmShapes, DirectConvEmulation,
                         ::testing::ValuesIn(testing::conv_igemm_cases()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(FewChannels, DirectConvEmulation, ::testing::ValuesIn(few_channel_cases()),
                         [](const auto& info) { return info.param.name; });

// ConvTransposeDirect (kernels/conv_transpose.cuh): its phases on the direct kernel, emulated on
// the CPU (weights gathered, launches through the output maps, the bias fill), against the
// definition in double over conv_transpose_cases.cuh: every output written, each within FP32's
// error of its sum of |terms| (the phases sum the same products in another order).
class ConvTransposeDirectEmulation : public ::testing::TestWithParam<testing::ConvTransposeCase> {};

TEST_P(ConvTransposeDirectEmulation, MatchesTheDefinition) {
  const testing::ConvTransposeCase& c = GetParam();
  const ConvTransposeShape d = detail::conv_transpose_3d(c.shape);
  const int64_t volume = d.kernel[0] * d.kernel[1] * d.kernel[2];
  const auto x = testing::uniform_floats(
      d.batch * d.in_channels * d.input[0] * d.input[1] * d.input[2], 91, -1.f, 1.f);
  const auto w =
      testing::uniform_floats(d.in_channels * (d.out_channels / d.groups) * volume, 92, -1.f, 1.f);
  const auto bias = testing::uniform_floats(d.out_channels, 93, -1.f, 1.f);
  std::vector<double> scale;
  std::vector<double> expected =
      testing::conv_transpose_direct(c.shape, std::vector<double>(x.begin(), x.end()),
                                     std::vector<double>(w.begin(), w.end()), &scale);
  const int64_t out_plane = d.output[0] * d.output[1] * d.output[2];
  for (size_t i = 0; i < expected.size(); ++i) {
    const double b = bias[i / out_plane % d.out_channels];
    if (epilogue_has_bias(c.epilogue)) expected[i] += b, scale[i] += std::fabs(b);
    expected[i] = detail::gemm_activation(static_cast<float>(expected[i]), c.epilogue);
  }
  const std::vector<float> y =
      testing::emulate_conv_transpose_direct(c.shape, c.epilogue, x, w, bias);
  ASSERT_EQ(y.size(), expected.size()) << c.name << ": a phase the direct kernel refused";
  EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance{1e-5, 0, 1e-5}, &scale)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvTransposeDirectEmulation,
                         ::testing::ValuesIn(testing::conv_transpose_cases()),
                         [](const auto& info) { return info.param.name; });

// Through an output map that interleaves the outputs into every other element of a y twice as
// wide (what a transposed convolution's phase does): the mapped elements hold the dense result,
// the others keep their poison.
TEST(DirectConvPlan, WritesThroughTheOutputMap) {
  const ConvIgemmShape s = testing::conv_case_shape(2, 3, 10, 1, {6, 9}, {3}, {1}, {1});
  DirectConvParams p;
  ASSERT_EQ(detail::plan_direct_conv(s, 4, p), "");
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 51, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 52, -1.f, 1.f);
  const std::vector<float> bias(s.out_channels, 0.0f);
  std::vector<float> dense(testing::conv_output_elements(s), kNaN);
  testing::emulate_direct_conv(p, x, w, bias, dense);
  const int64_t oh = s.output[0], ow = s.output[1];
  p.y_step[1] = 2 * (2 * ow), p.y_step[2] = 2, p.y_origin = 1;  // rows 0, 2, ...; odd columns
  p.y_channel = (2 * oh) * (2 * ow), p.y_image = s.out_channels * p.y_channel;
  std::vector<float> wide(s.batch * p.y_image, -7.0f);
  testing::emulate_direct_conv(p, x, w, bias, wide);
  int64_t written = 0;
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t c = 0; c < s.out_channels; ++c)
      for (int64_t i = 0; i < 2 * oh; ++i)
        for (int64_t j = 0; j < 2 * ow; ++j) {
          const float got = wide[n * p.y_image + c * p.y_channel + i * 2 * ow + j];
          if (i % 2 == 0 && j % 2 == 1) {
            ++written;
            EXPECT_EQ(got, dense[((n * s.out_channels + c) * oh + i / 2) * ow + j / 2]);
          } else {
            EXPECT_EQ(got, -7.0f);
          }
        }
  EXPECT_EQ(written, static_cast<int64_t>(dense.size()));
}

// A host-side output transform: y = t * scale[plane] + plane, different for every (n, c) plane.
struct PlaneAffine {
  const float* scale;
  float operator()(int64_t plane, float t) const {
    return t * scale[plane] + static_cast<float>(plane);
  }
};

// The output transform (an epilogue's per-element rest, from the plan) is applied to each result
// after the bias and activation, with the plane of its (image, channel), grouped or not.
TEST(DirectConvPlan, AppliesTheOutputTransformPerPlane) {
  for (const int64_t groups : {1, 2}) {
    const ConvIgemmShape s = testing::conv_case_shape(3, 4, 12, groups, {7, 40}, {3}, {1}, {1});
    DirectConvParams p;
    ASSERT_EQ(detail::plan_direct_conv(s, 4, p), "");
    p.epilogue = MatmulEpilogue::bias_relu;
    const auto x = testing::uniform_floats(testing::conv_input_elements(s), 61, -1.f, 1.f);
    const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 62, -1.f, 1.f);
    const auto bias = testing::uniform_floats(s.out_channels, 63, -1.f, 1.f);
    const auto scale = testing::uniform_floats(s.batch * s.out_channels, 64, 0.5f, 2.f);
    std::vector<float> y(testing::conv_output_elements(s), kNaN);
    testing::emulate_direct_conv(p, x, w, bias, y, PlaneAffine{scale.data()});
    const std::vector<float> plain = k_order_reference(s, p.epilogue, x, w, bias);
    const int64_t plane_size = static_cast<int64_t>(plain.size()) / (s.batch * s.out_channels);
    std::vector<float> expected(plain.size());
    for (size_t i = 0; i < plain.size(); ++i)
      expected[i] = PlaneAffine{scale.data()}(static_cast<int64_t>(i) / plane_size, plain[i]);
    EXPECT_TRUE(testing::bitwise_equal(y, expected)) << "groups " << groups;
  }
}

// A channel reduction (ChannelReduction): each output position's channels, after the epilogue and
// the output transform, combined by sum, max or min in the kernel's order, then finished per
// image — one value per position in a y of one channel; NaN propagates.
template <detail::ChannelReduceOp kOp>
void expect_channel_reduction(const ConvIgemmCase& c, const char* op) {
  using Reduction = detail::ChannelReduction<kOp, testing::ImageHalf>;
  const ConvIgemmShape& s = c.shape;
  DirectConvParams p;
  ASSERT_EQ(detail::plan_direct_conv(s, 4, p, detail::DirectConvMath::fp32, true), "") << c.name;
  EXPECT_TRUE(p.reduce_channels);
  EXPECT_EQ(p.chunks, 1) << c.name;
  EXPECT_EQ(p.y_channel, 0);
  EXPECT_EQ(p.partial_floats, p.warp_channels * p.warp_rows * p.tile_cols());
  EXPECT_LE(p.shared_bytes(), detail::kDirectConvSharedBytes);
  p.epilogue = c.epilogue;
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 71, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 72, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 73, -1.f, 1.f);
  std::vector<float> values = k_order_reference(s, c.epilogue, x, w, bias);
  const int64_t plane_size = static_cast<int64_t>(values.size()) / (s.batch * s.out_channels);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = testing::PlaneSkew{}(static_cast<int64_t>(i) / plane_size, values[i]);
  const std::vector<float> expected =
      testing::reduce_channels_in_slices(values, s.batch, s.out_channels, Reduction{});
  std::vector<float> y(expected.size(), kNaN);
  testing::emulate_direct_conv(p, x, w, bias, y, testing::PlaneSkew{}, Reduction{});
  EXPECT_TRUE(testing::bitwise_equal(y, expected)) << c.name << " " << op;
}

TEST(DirectConvPlan, ReducesEachPositionsChannels) {
  for (const ConvIgemmCase& c : testing::channel_reduction_cases()) {
    expect_channel_reduction<detail::ChannelReduceOp::sum>(c, "sum");
    expect_channel_reduction<detail::ChannelReduceOp::max>(c, "max");
    expect_channel_reduction<detail::ChannelReduceOp::min>(c, "min");
  }
}

TEST(DirectConvPlan, ChannelReductionPropagatesNaNAndStartsFromItsIdentity) {
  using Min = detail::ChannelReduction<detail::ChannelReduceOp::min>;
  using Max = detail::ChannelReduction<detail::ChannelReduceOp::max>;
  using Sum = detail::ChannelReduction<detail::ChannelReduceOp::sum>;
  EXPECT_TRUE(std::isnan(Min::combine(kNaN, -5.f)));
  EXPECT_TRUE(std::isnan(Min::combine(-5.f, kNaN)));
  EXPECT_TRUE(std::isnan(Max::combine(5.f, kNaN)));
  EXPECT_TRUE(std::isnan(Max::combine(kNaN, 5.f)));
  EXPECT_EQ(Min::combine(Min::identity(), 3.f), 3.f);
  EXPECT_EQ(Max::combine(Max::identity(), -3.f), -3.f);
  EXPECT_EQ(Sum::combine(Sum::identity(), 3.f), 3.f);
  EXPECT_EQ(Min::combine(2.f, -1.f), -1.f);
  EXPECT_EQ(Max::combine(2.f, -1.f), 2.f);
}

TEST(DirectConvPlan, ChannelReductionNeedsEveryChannelInOneBlock) {
  DirectConvParams p;
  EXPECT_NE(detail::plan_direct_conv(testing::conv_case_shape(1, 8, 32, 2, {8, 40}, {3}), 132, p,
                                     detail::DirectConvMath::fp32, true)
                .find("one group"),
            std::string::npos);
  // FP32 FMAs: 8 slices of 8 channels; the tensor cores: 8 of 16.
  EXPECT_NE(detail::plan_direct_conv(testing::conv_case_shape(1, 8, 72, 1, {8, 40}, {3}), 132, p,
                                     detail::DirectConvMath::fp32, true)
                .find("at most 64 output channels"),
            std::string::npos);
  EXPECT_EQ(detail::plan_direct_conv(testing::conv_case_shape(1, 8, 72, 1, {8, 40}, {3}), 132, p,
                                     detail::DirectConvMath::tf32, true),
            "");
  EXPECT_EQ(p.chunks, 1);
  EXPECT_EQ(p.warp_channels, 8);  // never fewer slices to fit
  // Without the reduction the same shape takes two chunks of channels on FP32 FMAs.
  ASSERT_EQ(detail::plan_direct_conv(testing::conv_case_shape(1, 8, 72, 1, {8, 40}, {3}), 132, p),
            "");
  EXPECT_EQ(p.chunks, 2);
  EXPECT_FALSE(p.reduce_channels);
  EXPECT_EQ(p.partial_floats, 0);
}

// The tensor-core form's tiling and shared memory, as direct_conv_compute_tf32 reads it: 16
// channels a slice, K padded to 8s, the patch pitch 16 words past 32s; the weights as each lane's
// mma A fragment (channel g or g + 8 by k t or t + 4 of the K step), zeros past K and the group;
// the table k's offset of its (plane, kh, kw) in the patch, 0 past K; the patch as x holds it.
TEST(DirectConvPlan, Tf32SharedMemoryHoldsTheMmaOperands) {
  // 3 -> 20 channels (K 27, padded to 32; a second slice only 4 channels deep), dilation 2, 3-d.
  const ConvIgemmShape s =
      testing::conv_case_shape(1, 3, 20, 1, {3, 9, 40}, {2, 3, 3}, {1}, {0}, {0}, {1, 2, 2});
  DirectConvParams p;
  ASSERT_EQ(detail::plan_direct_conv(s, 132, p, detail::DirectConvMath::tf32), "");
  EXPECT_EQ(p.slice_channels, 16);
  EXPECT_EQ(p.warp_channels, 2);
  EXPECT_EQ(p.k, 54);
  EXPECT_EQ(p.k_steps, 7);
  EXPECT_EQ(p.table_floats, 56);
  EXPECT_EQ(p.weight_floats, 7 * 2 * 128);
  EXPECT_EQ(p.patch_cols % 32, 16);
  EXPECT_GE(p.patch_cols, (p.tile_cols() - 1) * p.stride[2] + 2 * p.dilation[2] + 1);
  EXPECT_LE(p.shared_bytes(), detail::kDirectConvSharedBytes);
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 51, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 52, -1.f, 1.f);
  std::vector<float> shared(p.shared_bytes() / 4, kNaN);
  const detail::DirectConvBlock b = detail::direct_conv_block(p, 0);
  detail::direct_conv_load_weights(p, b, w.data(), shared.data(), 0, 1);
  for (int step = 0; step < p.k_steps; ++step)
    for (int slice = 0; slice < p.warp_channels; ++slice)
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < 4; ++e) {
          const int co = slice * 16 + lane / 4 + (e & 1) * 8, k = step * 8 + lane % 4 + (e & 2) * 2;
          const float want = co < 20 && k < p.k ? w[co * p.k + k] : 0.f;
          const float got = shared[((step * p.warp_channels + slice) * 32 + lane) * 4 + e];
          ASSERT_EQ(got, want) << "step " << step << " slice " << slice << " lane " << lane;
        }
  const auto* table = reinterpret_cast<const int*>(shared.data() + p.weight_floats);
  for (int k = 0; k < p.table_floats; ++k) {
    const int plane = k / 9, kh = k / 3 % 3, kw = k % 3;
    EXPECT_EQ(table[k], k < p.k ? (plane * p.patch_rows + 2 * kh) * p.patch_cols + 2 * kw : 0) << k;
  }
  for (int tid = 0; tid < 32; ++tid)  // one warp: a lane per column
    detail::direct_conv_load_patch(p, b, 0, x.data(), shared.data(), tid, 32);
  // Plane (channel 1, kd 1), row 2, column 5: x[image 0][1][1][2][5].
  const float* patch = shared.data() + p.patch_start();
  EXPECT_EQ(patch[(3 * p.patch_rows + 2) * p.patch_cols + 5], x[((1 * 3 + 1) * 9 + 2) * 40 + 5]);
}

// The tensor-core form at a level-2 task's shape (8 -> 64 channels, 254 columns): four columns
// per lane, two blocks per SM, the patch double-buffered within 96 KiB; at most two columns per
// lane (set_max_cols_per_lane), three blocks per SM, the second buffer only within 64 KiB.
TEST(DirectConvPlan, Tf32ColumnsPerLaneSetTheBlocksPerSm) {
  const ConvIgemmShape s = testing::conv_case_shape(128, 8, 64, 1, {256, 256}, {3});
  DirectConvParams p;
  ASSERT_EQ(detail::plan_direct_conv(s, 132, p, detail::DirectConvMath::tf32), "");
  EXPECT_EQ(p.cols_per_lane, 4);
  EXPECT_EQ(detail::direct_conv_blocks_per_sm(p.math, p.cols_per_lane), 2);
  EXPECT_EQ(p.patch_buffers, 2);
  EXPECT_LE(p.shared_bytes(), detail::kDirectConvSharedBytes);
  ASSERT_EQ(detail::plan_direct_conv(s, 132, p, detail::DirectConvMath::tf32, false, 2), "");
  EXPECT_EQ(p.cols_per_lane, 2);
  EXPECT_EQ(p.col_tiles, 4);
  EXPECT_EQ(detail::direct_conv_blocks_per_sm(p.math, p.cols_per_lane), 3);
  EXPECT_EQ(p.patch_buffers, 2);
  EXPECT_LE(p.shared_bytes(), detail::kDirectConvSharedBytes * 2 / 3);
  // 16 input channels: two 20 KiB patches beside 36 KiB of weights exceed 64 KiB.
  ASSERT_EQ(detail::plan_direct_conv(testing::conv_case_shape(128, 16, 64, 1, {256, 256}, {3}),
                                     132, p, detail::DirectConvMath::tf32, false, 2),
            "");
  EXPECT_EQ(p.cols_per_lane, 2);
  EXPECT_EQ(p.patch_buffers, 1) << p.shared_bytes();
  // The FP32 FMAs take three blocks per SM at any width.
  EXPECT_EQ(detail::direct_conv_blocks_per_sm(detail::DirectConvMath::fp32, 4), 3);
}

// set_max_cols_per_lane takes 1, 2 or 4: init names anything else, before it asks the device.
TEST(DirectConvPlan, InitRefusesColumnsPerLaneOtherThanOneTwoOrFour) {
  const ConvIgemmShape s = testing::conv_case_shape(1, 8, 16, 1, {8, 40}, {3});
  for (int cols : {0, 3, 8}) {
    ConvDirectTf32 conv;
    conv.set_max_cols_per_lane(cols);
    std::string error;
    EXPECT_EQ(conv.init(s, MatmulEpilogue::none, error), STITCH_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(error.find("1, 2 or 4, not " + std::to_string(cols)), std::string::npos) << error;
  }
}

// The tiling: channel slices for the group's output channels, columns for the width (column
// groups where rows run out), row steps while the blocks fill the SMs, and the refusals.
TEST(DirectConvPlan, TilesFollowTheShape) {
  DirectConvParams p;
  // 64 output channels: 8 slices of 8, one warp row; 126 columns: 4 per lane.
  ASSERT_EQ(
      detail::plan_direct_conv(testing::conv_case_shape(128, 8, 64, 1, {128, 128}, {3}), 132, p),
      "");
  EXPECT_EQ(p.warp_channels, 8);
  EXPECT_EQ(p.warp_rows, 1);
  EXPECT_EQ(p.cols_per_lane, 4);
  EXPECT_EQ(p.chunks, 1);
  EXPECT_EQ(p.row_steps, detail::kDirectConvMaxRowSteps);  // 128 · 126 row tiles: plenty of blocks
  EXPECT_EQ(p.patch_buffers, 2);  // the next step's patch copied while this one computes
  EXPECT_EQ(p.shared_bytes(), 4 * (p.weight_floats + 2 * p.patch_floats));
  EXPECT_EQ(p.patch_start(1) - p.patch_start(0), p.patch_floats);
  EXPECT_EQ(p.patch_start(2), p.patch_start(0));
  // 16 output channels: 2 slices, 4 warp rows; 30 columns: 1 per lane; few blocks: 1 row step,
  // one patch buffer.
  ASSERT_EQ(detail::plan_direct_conv(testing::conv_case_shape(1, 3, 16, 1, {32, 32}, {3}), 132, p),
            "");
  EXPECT_EQ(p.warp_channels, 2);
  EXPECT_EQ(p.warp_rows, 4);
  EXPECT_EQ(p.cols_per_lane, 1);
  EXPECT_EQ(p.row_steps, 1);
  EXPECT_EQ(p.patch_buffers, 1);
  // A patch too large for two buffers within a third of an SM's shared memory keeps one: 16
  // channels of 7 rows x 131 columns (57 KiB) beside 16 KiB of weights (K 256, FP32 FMAs).
  ASSERT_EQ(
      detail::plan_direct_conv(testing::conv_case_shape(64, 16, 16, 1, {60, 520}, {4}), 132, p),
      "");
  EXPECT_GT(p.row_steps, 1);
  EXPECT_EQ(p.patch_buffers, 1) << p.shared_bytes();
  EXPECT_LE(p.shared_bytes(), detail::kDirectConvSharedBytes);
  // A 1-d convolution (one output row): the warps past it take column groups, 4 of 128 columns.
  ASSERT_EQ(
      detail::plan_direct_conv(testing::conv_case_shape(2, 4, 16, 1, {500}, {5}, {1}, {2}), 132, p),
      "");
  EXPECT_EQ(p.warp_channels, 2);
  EXPECT_EQ(p.warp_rows, 1);
  EXPECT_EQ(p.warp_col_groups, 4);
  EXPECT_EQ(p.tile_cols(), 512);
  EXPECT_EQ(p.col_tiles, 1);
  // 200 output channels: 8 slices, 4 chunks.
  ASSERT_EQ(detail::plan_direct_conv(testing::conv_case_shape(1, 3, 200, 1, {8, 8}, {3}), 132, p),
            "");
  EXPECT_EQ(p.chunks, 4);
  // K over the limit, and a patch no tiling fits (a 1-d window spanning 40,000 columns).
  EXPECT_NE(detail::plan_direct_conv(testing::conv_case_shape(1, 128, 16, 1, {8, 8}, {3}), 132, p)
                .find("products per output"),
            std::string::npos);
  EXPECT_NE(detail::plan_direct_conv(
                testing::conv_case_shape(1, 1, 8, 1, {40100}, {5}, {1}, {0}, {0}, {10000}), 132, p)
                .find("shared memory"),
            std::string::npos);
  EXPECT_NE(ConvDirect::shape_problem(testing::conv_case_shape(1, 4, 8, 3, {8, 8}, {3})), "");
  // The planner's mirror (direct_conv_eligible) is pinned to the same outcomes on the same shapes
  // (tests/plan/conv_test.cc, DirectConvPlan): 8 -> 64 channels, a 1-d window of 5 dilated 10
  // (fits) and 10000 (no tiling fits).
  EXPECT_EQ(ConvDirect::shape_problem(
                testing::conv_case_shape(128, 8, 64, 1, {40100}, {5}, {1}, {0}, {0}, {10})),
            "");
  EXPECT_NE(ConvDirect::shape_problem(
                testing::conv_case_shape(128, 8, 64, 1, {40100}, {5}, {1}, {0}, {0}, {10000}))
                .find("shared memory"),
            std::string::npos);
}

}  // namespace
}  // namespace stitch::kernels
