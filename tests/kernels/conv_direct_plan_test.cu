// The direct convolution (kernels/conv_direct.cuh) without a GPU (label unit): whole launches
// emulated on the CPU block by block and thread by thread — the kernel's own weight and patch
// copies, then every thread's compute per row step, shared memory poisoned with NaN and y too —
// give exactly the FP32 fmaf sum of each output's K products in (channel, kd, kh, kw) order with
// the epilogue, over the shape table of conv_igemm_cases.cuh (the ones within the kernel's K) and
// shapes of few input channels as KernelBench's level 2 has them; through an output map, the
// outputs land where it says and nothing else is touched. Plus the plan's choices and refusals.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv_direct_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_direct.cuh"

namespace stitch::kernels {
namespace {

using detail::DirectConvParams;
using testing::ConvIgemmCase;
using testing::few_channel_cases;
using testing::k_order_reference;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// One launch on the CPU into `y` (which the caller sized and filled).
void emulate_launch(const DirectConvParams& p, const std::vector<float>& x,
                    const std::vector<float>& w, const std::vector<float>& bias,
                    std::vector<float>& y) {
  std::vector<float> shared(p.weight_floats + p.patch_floats);
  const int threads = detail::kDirectConvThreads;
  for (int64_t block = 0; block < p.blocks; ++block) {
    std::fill(shared.begin(), shared.end(), kNaN);
    const detail::DirectConvBlock b = detail::direct_conv_block(p, block);
    for (int tid = 0; tid < threads; ++tid)
      detail::direct_conv_load_weights(p, b, w.data(), shared.data(), tid, threads);
    for (int step = 0; step < p.row_steps; ++step) {
      if (b.oh0 + step * p.warp_rows >= p.out[1]) break;
      std::fill(shared.begin() + p.weight_floats, shared.end(), kNaN);
      for (int tid = 0; tid < threads; ++tid)
        detail::direct_conv_load_patch(p, b, step, x.data(), shared.data(), tid, threads);
      for (int tid = 0; tid < threads; ++tid) {
        switch (p.cols_per_lane) {
          case 1:
            detail::direct_conv_compute<1>(p, b, step, shared.data(), bias.data(), y.data(), tid);
            break;
          case 2:
            detail::direct_conv_compute<2>(p, b, step, shared.data(), bias.data(), y.data(), tid);
            break;
          default:
            detail::direct_conv_compute<4>(p, b, step, shared.data(), bias.data(), y.data(), tid);
        }
      }
    }
  }
}

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
  emulate_launch(p, x, w, bias, y);
  EXPECT_TRUE(testing::bitwise_equal(y, k_order_reference(s, c.epilogue, x, w, bias))) << c.name;
}

INSTANTIATE_TEST_SUITE_P(IgemmShapes, DirectConvEmulation,
                         ::testing::ValuesIn(testing::conv_igemm_cases()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(FewChannels, DirectConvEmulation, ::testing::ValuesIn(few_channel_cases()),
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
  emulate_launch(p, x, w, bias, dense);
  const int64_t oh = s.output[0], ow = s.output[1];
  p.y_step[1] = 2 * (2 * ow), p.y_step[2] = 2, p.y_origin = 1;  // rows 0, 2, ...; odd columns
  p.y_channel = (2 * oh) * (2 * ow), p.y_image = s.out_channels * p.y_channel;
  std::vector<float> wide(s.batch * p.y_image, -7.0f);
  emulate_launch(p, x, w, bias, wide);
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
  // 16 output channels: 2 slices, 4 warp rows; 30 columns: 1 per lane; few blocks: 1 row step.
  ASSERT_EQ(detail::plan_direct_conv(testing::conv_case_shape(1, 3, 16, 1, {32, 32}, {3}), 132, p),
            "");
  EXPECT_EQ(p.warp_channels, 2);
  EXPECT_EQ(p.warp_rows, 4);
  EXPECT_EQ(p.cols_per_lane, 1);
  EXPECT_EQ(p.row_steps, 1);
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
