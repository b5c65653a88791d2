// The host-checkable half of the depthwise convolution (kernels/conv_depthwise_tile.cuh), without
// a GPU (label unit): over the shape table of conv_depthwise_cases.cuh, the plan takes the case's
// path; tiles cover the plane and each tile's patch holds every window of its outputs;
// and whole launches of the tiled kernel, emulated on the CPU block by block and thread by thread
// (the kernel's own copy and compute functions, shared memory poisoned with NaN first), give
// exactly the FP32 fmaf sum of each window in window order — for 16-byte and 4-byte copies and for
// a smaller block. Plus the plan's choices on shapes the table does not hold.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "conv_depthwise_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_depthwise.cuh"

namespace stitch::kernels {
namespace {

using detail::DepthwisePath;
using detail::DepthwisePlan;
using detail::DepthwiseTile;
using detail::DepthwiseTiling;
using testing::DepthwiseCase;

// y by definition: each window's products added in window order with fmaf, padding as zeros (the
// tiled kernel multiplies the patch's zeros too).
std::vector<float> window_order_reference(const DepthwiseConv2dShape& s,
                                          const std::vector<float>& x,
                                          const std::vector<float>& w) {
  const int64_t out_channels = s.channels * s.multiplier;
  std::vector<float> y(s.batch * out_channels * s.out_h * s.out_w);
  for (int64_t plane = 0; plane < s.batch * out_channels; ++plane) {
    const int64_t k = plane % out_channels, n = plane / out_channels;
    const float* xp = x.data() + (n * s.channels + k / s.multiplier) * s.in_h * s.in_w;
    for (int64_t oh = 0; oh < s.out_h; ++oh)
      for (int64_t ow = 0; ow < s.out_w; ++ow) {
        float acc = 0.0f;
        for (int64_t i = 0; i < s.kernel_h; ++i)
          for (int64_t j = 0; j < s.kernel_w; ++j) {
            const int64_t ih = oh * s.stride_h - s.pad_top + i * s.dilation_h;
            const int64_t iw = ow * s.stride_w - s.pad_left + j * s.dilation_w;
            const bool inside = ih >= 0 && ih < s.in_h && iw >= 0 && iw < s.in_w;
            acc = std::fmaf(inside ? xp[ih * s.in_w + iw] : 0.0f,
                            w[(k * s.kernel_h + i) * s.kernel_w + j], acc);
          }
        y[(plane * s.out_h + oh) * s.out_w + ow] = acc;
      }
  }
  return y;
}

// A launch on the CPU: per block, every thread's copy (the kernel's __syncthreads), then every
// thread's compute. y starts NaN, the patch too: an output never written, or computed from a word
// never copied, stays or turns NaN.
template <class Transform = detail::PlaneIdentity>
std::vector<float> emulate_launch(const DepthwiseConv2dShape& s, const DepthwisePlan& plan,
                                  const std::vector<float>& x, const std::vector<float>& w,
                                  const Transform& transform = {}) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> y(s.batch * s.channels * s.multiplier * s.out_h * s.out_w, nan);
  const detail::DepthwiseParams& p = plan.params;
  std::vector<float4> shared(p.tiling.shared_bytes / sizeof(float4) + 1);  // 16-byte aligned
  float* patch = reinterpret_cast<float*>(shared.data());
  detail::visit_depthwise_window(p, [&](auto window) {
    using Window = decltype(window);
    for (int64_t block = 0; block < plan.blocks; ++block) {
      const DepthwiseTile tile = detail::depthwise_tile(p, static_cast<unsigned>(block));
      std::fill(patch, patch + shared.size() * 4, nan);
      const float* x_plane = x.data() + int64_t{tile.in_plane} * s.in_h * s.in_w;
      for (int tid = 0; tid < p.tiling.threads; ++tid)
        detail::depthwise_load_patch<Window::kPhases>(p, tile, x_plane, tid, patch, transform);
      for (int tid = 0; tid < p.tiling.threads; ++tid)
        detail::depthwise_compute_tile<Window>(p, tile, patch, w.data(), y.data(), tid);
    }
  });
  return y;
}

struct Launch {
  bool x_aligned;
  int block;
};
constexpr Launch kLaunches[] = {{true, 256}, {false, 256}, {true, 64}};

class DepthwisePlanCases : public ::testing::TestWithParam<DepthwiseCase> {};

TEST_P(DepthwisePlanCases, TakesTheCasesPath) {
  const DepthwiseConv2dShape& s = GetParam().shape;
  ASSERT_EQ(depthwise_shape_problem(s), "");
  EXPECT_EQ(detail::plan_depthwise_conv2d(s, true, 256).path, GetParam().path);
  EXPECT_EQ(detail::plan_depthwise_conv2d(s, false, 256).path, GetParam().path);
}

// Tiles split the plane into equal tiles (the last one partial) within the block's threads and
// the shared-memory budget; every tap of every output of a tile lies in its patch: rows
// [in_row, in_row + patch_h), columns [in_col + shift, in_col + shift + patch_w) within the pitch.
TEST_P(DepthwisePlanCases, PatchesHoldEveryWindowOfTheirTile) {
  const DepthwiseConv2dShape& s = GetParam().shape;
  for (const Launch& launch : kLaunches) {
    const DepthwisePlan plan = detail::plan_depthwise_conv2d(s, launch.x_aligned, launch.block);
    if (plan.path == DepthwisePath::simple) continue;
    const DepthwiseTiling& t = plan.params.tiling;
    EXPECT_EQ(t.threads % 32, 0);
    EXPECT_LE(t.threads, launch.block);
    EXPECT_LE(t.thread_cols * t.thread_rows, t.threads);
    EXPECT_LE(t.shared_bytes, detail::kDepthwiseSharedBytes);
    EXPECT_EQ(t.pitch % 4, 0);
    EXPECT_EQ(t.vector_loads, launch.x_aligned && s.in_w % 4 == 0);
    EXPECT_GE(int64_t{t.tiles_h} * t.tile_h, s.out_h);
    EXPECT_LT(int64_t{t.tiles_h - 1} * t.tile_h, s.out_h);
    EXPECT_GE(int64_t{t.tiles_w} * t.tile_w, s.out_w);
    EXPECT_LT(int64_t{t.tiles_w - 1} * t.tile_w, s.out_w);
    EXPECT_EQ(plan.blocks, s.batch * s.channels * t.tiles_h * t.tiles_w);
    int bad = 0;
    for (int64_t block = 0; block < t.tiles_h * t.tiles_w; ++block) {
      const DepthwiseTile tile = detail::depthwise_tile(plan.params, static_cast<unsigned>(block));
      EXPECT_EQ(tile.in_plane, 0);
      if (t.vector_loads) EXPECT_EQ(((tile.in_col % 4) + 4) % 4, 0);
      EXPECT_LE(tile.shift + t.patch_w, t.pitch);
      for (int64_t oh = tile.out_row; oh < std::min<int64_t>(tile.out_row + t.tile_h, s.out_h);
           ++oh)
        for (int64_t ow = tile.out_col; ow < std::min<int64_t>(tile.out_col + t.tile_w, s.out_w);
             ++ow) {
          const int64_t top = oh * s.stride_h - s.pad_top - tile.in_row;
          const int64_t bottom = top + (s.kernel_h - 1) * s.dilation_h;
          const int64_t left = ow * s.stride_w - s.pad_left - tile.in_col;
          const int64_t right = left + (s.kernel_w - 1) * s.dilation_w;
          bad += top < 0 || bottom >= t.patch_h || left < tile.shift ||
                 right >= tile.shift + t.patch_w;
        }
    }
    EXPECT_EQ(bad, 0) << "x aligned " << launch.x_aligned << ", block " << launch.block;
  }
}

TEST_P(DepthwisePlanCases, EmulatedLaunchGivesTheWindowOrderSum) {
  const DepthwiseConv2dShape& s = GetParam().shape;
  if (GetParam().path == DepthwisePath::simple) return;  // the simple kernel runs on GPUs only
  const auto x = testing::uniform_floats(s.batch * s.channels * s.in_h * s.in_w, 1, -1.f, 1.f);
  const auto w =
      testing::uniform_floats(s.channels * s.multiplier * s.kernel_h * s.kernel_w, 2, -1.f, 1.f);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(x.data()) % 16, 0u);  // the 16-byte copies' premise
  const std::vector<float> expected = window_order_reference(s, x, w);
  for (const Launch& launch : kLaunches) {
    const DepthwisePlan plan = detail::plan_depthwise_conv2d(s, launch.x_aligned, launch.block);
    ASSERT_NE(plan.path, DepthwisePath::simple);
    const std::vector<float> y = emulate_launch(s, plan, x, w);
    int64_t wrong = 0, first = -1;
    for (size_t i = 0; i < y.size(); ++i)
      if (!(y[i] == expected[i]) && wrong++ == 0) first = static_cast<int64_t>(i);
    EXPECT_EQ(wrong, 0) << "x aligned " << launch.x_aligned << ", block " << launch.block
                        << ": first at " << first << " got " << (first < 0 ? 0 : y[first])
                        << " want " << (first < 0 ? 0 : expected[first]);
  }
}

// With an input transform (a fused BatchNorm + ReLU6): the window-order sum of the transformed
// input, padding still zero (the transform maps 0 to 0.5, so transformed padding would show).
TEST_P(DepthwisePlanCases, EmulatedLaunchTransformsTheInputButNotThePadding) {
  const DepthwiseConv2dShape& s = GetParam().shape;
  if (GetParam().path == DepthwisePath::simple) return;
  const auto x = testing::uniform_floats(s.batch * s.channels * s.in_h * s.in_w, 3, -1.f, 1.f);
  const auto w =
      testing::uniform_floats(s.channels * s.multiplier * s.kernel_h * s.kernel_w, 4, -1.f, 1.f);
  const testing::PlaneAffineRelu6 transform{s.channels};
  const std::vector<float> expected =
      window_order_reference(s, testing::transformed(s, x, transform), w);
  for (const Launch& launch : kLaunches) {
    const DepthwisePlan plan = detail::plan_depthwise_conv2d(s, launch.x_aligned, launch.block);
    const std::vector<float> y = emulate_launch(s, plan, x, w, transform);
    int64_t wrong = 0;
    for (size_t i = 0; i < y.size(); ++i)
      wrong += !(y[i] == expected[i]);
    EXPECT_EQ(wrong, 0) << "x aligned " << launch.x_aligned << ", block " << launch.block;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, DepthwisePlanCases,
                         ::testing::ValuesIn(testing::depthwise_cases()),
                         testing::case_name<DepthwiseCase>);

// EfficientNet's MBConv block: 5x5 stride 2 on [10, 672, 224, 224]: whole 112-output rows, two
// strips of 8 rows per block, the patch 35 rows from a 16-byte aligned column -4.
TEST(DepthwisePlan, MbconvTile) {
  const DepthwiseConv2dShape s =
      testing::depthwise_case_shape(10, 672, 1, 224, 224, 5, 5, 2, 2, 2, 2, 2, 1);
  const DepthwisePlan plan = detail::plan_depthwise_conv2d(s, true, 256);
  ASSERT_EQ(plan.path, DepthwisePath::fixed_window);
  const DepthwiseTiling& t = plan.params.tiling;
  EXPECT_EQ(t.thread_cols, 112);
  EXPECT_EQ(t.thread_rows, 2);
  EXPECT_EQ(t.threads, 224);
  EXPECT_EQ(t.rows_per_thread, 8);
  EXPECT_EQ(t.tiles_h * t.tiles_w, 7);
  EXPECT_EQ(t.patch_h, 35);
  EXPECT_EQ(t.patch_w, 227);
  EXPECT_EQ(t.pitch, 232);
  EXPECT_EQ(plan.blocks, 10 * 672 * 7);
  const DepthwiseTile first = detail::depthwise_tile(plan.params, 0);
  EXPECT_EQ(first.in_row, -2);
  EXPECT_EQ(first.in_col, -4);
  EXPECT_EQ(first.shift, 2);
  const DepthwiseTile last_of_plane = detail::depthwise_tile(plan.params, 6);
  EXPECT_EQ(last_of_plane.in_plane, 0);
  EXPECT_EQ(last_of_plane.out_row, 96);
  EXPECT_EQ(detail::depthwise_tile(plan.params, 7).in_plane, 1);
}

// Planes past 32-bit indices take the simple kernel; small planes a warp.
TEST(DepthwisePlan, LimitsAndSmallPlanes) {
  DepthwiseConv2dShape huge =
      testing::depthwise_case_shape(1, 1, 1, 50000, 50000, 3, 3, 1, 1, 1, 1, 1, 1);
  EXPECT_EQ(detail::plan_depthwise_conv2d(huge, true, 256).path, DepthwisePath::simple);
  const DepthwiseConv2dShape small =
      testing::depthwise_case_shape(10, 960, 1, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1);
  const DepthwisePlan plan = detail::plan_depthwise_conv2d(small, true, 256);
  EXPECT_EQ(plan.path, DepthwisePath::fixed_window);
  EXPECT_EQ(plan.params.tiling.threads, 32);
  EXPECT_EQ(plan.params.tiling.rows_per_thread, 7);
  EXPECT_EQ(plan.blocks, 9600);
}

}  // namespace
}  // namespace stitch::kernels
