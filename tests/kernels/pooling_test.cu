// kernels/pooling.cuh on a GPU against a double-precision CPU reference written from PyTorch's
// definitions (pooling_output_shape, max_pool*_with_indices, avg_pool* with count_include_pad and
// divisor_override, adaptive pools): 1-d, 2-d and 3-d windows with stride, padding, dilation, ceil
// mode, strided (permuted) input, NaN in a window, and the flat spatial index of every maximum;
// channels-last inputs with the outputs taken channels fastest (PoolShape::channels). Every case
// also runs with the tiled path allowed and forbidden: the outputs must be bitwise equal, and each
// case says which path plan_pool_tile picks for it; and each says whether a 2-d max may take the
// strip path (strip_eligible), whose values must be the per-element kernel's where it does.
// Skips without a CUDA device.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/pooling.cuh"

namespace stitch::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Tolerance;

// Input element (o, d, h, w) of a [outer, D, H, W] tensor stored with its last two dims swapped
// ([outer, D, W, H] in memory) when `transposed`: a strided read like a permuted view's; or, with
// `channels` > 0, stored channels-last ([N, D, H, W, C], o = n·C + c).
struct PoolLoad {
  const float* x;
  int64_t d_size, h_size, w_size;
  bool transposed;
  int64_t channels = 0;
  __device__ float operator()(int64_t o, int64_t d, int64_t h, int64_t w) const {
    if (channels > 0)
      return x[(((o / channels) * d_size + d) * h_size + h) * w_size * channels + w * channels +
               o % channels];
    const int64_t plane = (o * d_size + d) * h_size * w_size;
    return transposed ? x[plane + w * h_size + h] : x[plane + h * w_size + w];
  }
};
struct PoolStore {
  float* y;
  int64_t* index;
  __device__ void operator()(int64_t e, float value, int64_t i) const {
    y[e] = value;
    index[e] = i;
  }
};

struct PoolCase {
  std::string name;
  PoolKind kind;
  int64_t outer;
  std::vector<int64_t> in;  // spatial sizes, 1 to 3
  std::vector<int64_t> kernel, stride, pad, dilation, out_adaptive;
  bool ceil_mode = false, count_include_pad = true;
  int64_t divisor = 0;
  bool transposed = false, nan = false;
  int64_t channels = 0;  // > 0: the input channels-last, the outputs taken channels fastest
  bool tiled = false;    // plan_pool_tile takes it (launch_pool's shared-memory path)
  bool strips = false;   // strip_eligible: a 2-d max with a compile-time window may take strips
};

PoolCase tiled(PoolCase c) {
  c.tiled = true;
  return c;
}

PoolCase strips(PoolCase c) {
  c.strips = true;
  return c;
}

PoolCase channels_last(PoolCase c, int64_t channels) {
  c.name += "_channels_last";
  c.channels = channels;
  return c;
}

// PyTorch's pooling_output_shape.
int64_t output_size(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil) {
  const int64_t numerator = in + 2 * pad - dil * (k - 1) - 1 + (ceil ? stride - 1 : 0);
  int64_t out = numerator / stride + 1;
  if (ceil && (out - 1) * stride >= in + pad) --out;
  return out;
}

PoolShape shape_of(const PoolCase& c) {
  PoolShape s;
  s.outer = c.outer;
  const size_t lead = 3 - c.in.size();
  const bool adaptive = c.kind == PoolKind::adaptive_max || c.kind == PoolKind::adaptive_avg;
  for (size_t i = 0; i < c.in.size(); ++i) {
    const size_t d = lead + i;
    s.in[d] = c.in[i];
    if (adaptive) {
      s.out[d] = c.out_adaptive[i];
      continue;
    }
    s.kernel[d] = c.kernel[i];
    s.stride[d] = c.stride[i];
    s.pad[d] = c.pad[i];
    s.dilation[d] = c.dilation.empty() ? 1 : c.dilation[i];
    s.out[d] = output_size(s.in[d], s.kernel[d], s.pad[d], s.stride[d], s.dilation[d], c.ceil_mode);
  }
  s.count_include_pad = c.count_include_pad;
  s.divisor = c.divisor;
  s.channels = c.channels;
  return s;
}

// The reference, per output element: value and flat spatial index (max), in double.
void reference(const PoolCase& c, const PoolShape& s, const std::vector<float>& x,
               std::vector<double>& value, std::vector<double>& index) {
  const bool max = c.kind == PoolKind::max || c.kind == PoolKind::adaptive_max;
  const bool adaptive = c.kind == PoolKind::adaptive_max || c.kind == PoolKind::adaptive_avg;
  auto at = [&](int64_t o, int64_t d, int64_t h, int64_t w) {
    return static_cast<double>(x[((o * s.in[0] + d) * s.in[1] + h) * s.in[2] + w]);
  };
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t od = 0; od < s.out[0]; ++od)
      for (int64_t oh = 0; oh < s.out[1]; ++oh)
        for (int64_t ow = 0; ow < s.out[2]; ++ow) {
          const int64_t pos[3] = {od, oh, ow};
          std::vector<int64_t> taps[3];
          int64_t padded = 1;
          for (int dim = 0; dim < 3; ++dim) {
            if (adaptive) {
              const int64_t start = pos[dim] * s.in[dim] / s.out[dim];
              const int64_t end = ((pos[dim] + 1) * s.in[dim] + s.out[dim] - 1) / s.out[dim];
              for (int64_t p = start; p < end; ++p)
                taps[dim].push_back(p);
              continue;
            }
            const int64_t first = pos[dim] * s.stride[dim] - s.pad[dim];
            const int64_t dil = max ? s.dilation[dim] : 1;
            int64_t cells = 0;
            for (int64_t k = 0; k < s.kernel[dim]; ++k) {
              const int64_t p = first + k * dil;
              if (p < s.in[dim] + s.pad[dim]) ++cells;  // avg: padding counts, past it does not
              if (p >= 0 && p < s.in[dim]) taps[dim].push_back(p);
            }
            padded *= cells;
          }
          double best = -INFINITY, sum = 0;
          int64_t best_index = -1, count = 0;
          bool has_nan = false;
          for (int64_t d : taps[0])
            for (int64_t h : taps[1])
              for (int64_t w : taps[2]) {
                const double v = at(o, d, h, w);
                const int64_t flat = (d * s.in[1] + h) * s.in[2] + w;
                if (std::isnan(v)) has_nan = true;
                if (v > best || std::isnan(v)) best = v, best_index = flat;
                sum += v;
                ++count;
              }
          if (has_nan) best = NAN;
          double result;
          if (max) {
            result = best;
          } else if (count == 0) {
            result = 0;
          } else {
            const int64_t divisor = adaptive              ? count
                                    : s.divisor != 0      ? s.divisor
                                    : s.count_include_pad ? padded
                                                          : count;
            result = sum / static_cast<double>(divisor);
          }
          value.push_back(result);
          index.push_back(max ? static_cast<double>(best_index) : -1.0);
        }
}

// KernelH, KernelW: launch_pool's compile-time window size (0: the shape's).
template <int KernelH = 0, int KernelW = 0>
int launch_case(const PoolCase& c, const PoolShape& s, const PoolLoad& load, const PoolStore& store,
                bool allow_tiles) {
  switch (c.kind) {
    case PoolKind::max:  // a block other than the default for the per-element kernel
      return launch_pool<PoolKind::max, KernelH, KernelW>(s, load, store, nullptr, 128,
                                                          allow_tiles);
    case PoolKind::avg:
      return launch_pool<PoolKind::avg, KernelH, KernelW>(s, load, store, nullptr, 256,
                                                          allow_tiles);
    case PoolKind::adaptive_max:
      return launch_pool<PoolKind::adaptive_max>(s, load, store, nullptr, 256, allow_tiles);
    case PoolKind::adaptive_avg:
      return launch_pool<PoolKind::adaptive_avg>(s, load, store, nullptr, 256, allow_tiles);
    default:
      return cudaErrorInvalidValue;
  }
}

// The case's input as stored on the device: planes with h and w swapped when transposed, or
// channels-last.
std::vector<float> stored_input(const PoolCase& c, const PoolShape& s,
                                const std::vector<float>& x) {
  std::vector<float> stored = x;
  if (c.transposed)
    for (int64_t p = 0; p < s.outer * s.in[0]; ++p)
      for (int64_t h = 0; h < s.in[1]; ++h)
        for (int64_t w = 0; w < s.in[2]; ++w)
          stored[(p * s.in[2] + w) * s.in[1] + h] = x[(p * s.in[1] + h) * s.in[2] + w];
  const int64_t spatial = s.in[0] * s.in[1] * s.in[2];
  if (c.channels > 0)
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < spatial; ++i)
        stored[((o / c.channels) * spatial + i) * c.channels + o % c.channels] = x[o * spatial + i];
  return stored;
}

std::vector<float> case_input(const PoolCase& c, const PoolShape& s) {
  const int64_t in_numel = s.outer * s.in[0] * s.in[1] * s.in[2];
  std::vector<float> x = testing::uniform_floats(static_cast<size_t>(in_numel), 7, -2.0f, 2.0f);
  if (c.nan) x[5] = NAN;
  return x;
}

class Pooling : public ::testing::TestWithParam<PoolCase> {};

TEST_P(Pooling, MatchesTheDoubleReference) {
  REQUIRE_GPU();
  const PoolCase& c = GetParam();
  const PoolShape s = shape_of(c);
  const int64_t out_numel = s.outer * s.out[0] * s.out[1] * s.out[2];
  const std::vector<float> x = case_input(c, s);
  const std::vector<float> stored = stored_input(c, s, x);
  DeviceBuffer<float> dx(stored.size()), dy(static_cast<size_t>(out_numel));
  DeviceBuffer<int64_t> di(static_cast<size_t>(out_numel));
  ASSERT_CUDA(dx.upload(stored));
  const PoolLoad load{dx.data(), s.in[0], s.in[1], s.in[2], c.transposed, c.channels};
  const PoolStore store{dy.data(), di.data()};
  ASSERT_CUDA(launch_case(c, s, load, store, true));
  ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<double> value, index;
  reference(c, s, x, value, index);
  const bool max = c.kind == PoolKind::max || c.kind == PoolKind::adaptive_max;
  // Max is exact; a float sum of at most a few hundred terms of |x| <= 2 stays within 1e-5.
  EXPECT_TRUE(
      testing::all_close(dy.download(), value, max ? Tolerance{} : Tolerance{1e-5, 1e-5, 0}));
  if (max) EXPECT_TRUE(testing::all_close(di.download(), index, Tolerance{}));
}

// The tiled path must be the per-element kernel's results exactly: the same windows, comparisons
// (NaN, ties) and summation order.
TEST_P(Pooling, TiledPathIsBitwiseThePerElementKernel) {
  REQUIRE_GPU();
  const PoolCase& c = GetParam();
  const PoolShape s = shape_of(c);
  EXPECT_EQ(detail::plan_pool_tile(c.kind, s).eligible, c.tiled);
  const size_t out_numel = static_cast<size_t>(s.outer * s.out[0] * s.out[1] * s.out[2]);
  const std::vector<float> stored = stored_input(c, s, case_input(c, s));
  DeviceBuffer<float> dx(stored.size()), dy_tiled(out_numel), dy_each(out_numel);
  DeviceBuffer<int64_t> di_tiled(out_numel), di_each(out_numel);
  ASSERT_CUDA(dx.upload(stored));
  const PoolLoad load{dx.data(), s.in[0], s.in[1], s.in[2], c.transposed, c.channels};
  ASSERT_CUDA(launch_case(c, s, load, PoolStore{dy_each.data(), di_each.data()}, false));
  const std::vector<float> y_each = dy_each.download();
  const std::vector<int64_t> i_each = di_each.download();
  // The window's size from the shape, and where the case's 2-d window is 2x2 or 3x3, from the
  // template arguments (the unrolled loops).
  std::vector<std::pair<std::string, int (*)(const PoolCase&, const PoolShape&, const PoolLoad&,
                                             const PoolStore&, bool)>>
      launches = {{"runtime window", &launch_case<0, 0>}};
  if (s.kernel[1] == 2 && s.kernel[2] == 2) launches.push_back({"2x2", &launch_case<2, 2>});
  if (s.kernel[1] == 3 && s.kernel[2] == 3) launches.push_back({"3x3", &launch_case<3, 3>});
  for (const auto& [name, launch] : launches) {
    SCOPED_TRACE(name);
    ASSERT_CUDA(dy_tiled.upload(std::vector<float>(out_numel, -7.0f)));
    ASSERT_CUDA(launch(c, s, load, PoolStore{dy_tiled.data(), di_tiled.data()}, true));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> y_tiled = dy_tiled.download();
    ASSERT_EQ(y_tiled.size(), y_each.size());
    size_t differing = 0;
    for (size_t i = 0; i < y_tiled.size(); ++i)
      if (std::memcmp(&y_tiled[i], &y_each[i], sizeof(float)) != 0) ++differing;
    EXPECT_EQ(differing, 0u) << "of " << y_tiled.size() << " outputs";
    EXPECT_EQ(di_tiled.download(), i_each);
  }
}

// A store that declares it ignores the maximum's index: launch_pool may take the strip path.
struct ValueStore {
  static constexpr bool kStoresIndex = false;
  float* y;
  __device__ void operator()(int64_t e, float value, int64_t) const { y[e] = value; }
};

// The strip path (a 2-d max whose index no store reads, its window's size at compile time) gives
// the per-element kernel's values: the same maxima, NaN where it has NaN.
TEST_P(Pooling, StripPathGivesThePerElementKernelsValues) {
  REQUIRE_GPU();
  const PoolCase& c = GetParam();
  const PoolShape s = shape_of(c);
  const bool two_d_max = c.kind == PoolKind::max && c.in.size() == 2;
  EXPECT_EQ(two_d_max && detail::strip_eligible(s), c.strips);
  if (!c.strips) return;
  const size_t out_numel = static_cast<size_t>(s.outer * s.out[1] * s.out[2]);
  const std::vector<float> stored = stored_input(c, s, case_input(c, s));
  DeviceBuffer<float> dx(stored.size()), dy_strips(out_numel), dy_each(out_numel);
  DeviceBuffer<int64_t> di_each(out_numel);
  ASSERT_CUDA(dx.upload(stored));
  const PoolLoad load{dx.data(), s.in[0], s.in[1], s.in[2], c.transposed, c.channels};
  ASSERT_CUDA(launch_case(c, s, load, PoolStore{dy_each.data(), di_each.data()}, false));
  ASSERT_CUDA(dy_strips.upload(std::vector<float>(out_numel, -7.0f)));
  const ValueStore store{dy_strips.data()};
  if (s.kernel[1] == 2 && s.kernel[2] == 2)
    ASSERT_CUDA((launch_pool<PoolKind::max, 2, 2>(s, load, store, nullptr)));
  else if (s.kernel[1] == 3 && s.kernel[2] == 3)
    ASSERT_CUDA((launch_pool<PoolKind::max, 3, 3>(s, load, store, nullptr)));
  else
    ASSERT_CUDA((launch_pool<PoolKind::max, 4, 4>(s, load, store, nullptr)));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> y_strips = dy_strips.download(), y_each = dy_each.download();
  size_t differing = 0, nans = 0;
  for (size_t i = 0; i < out_numel; ++i) {
    nans += std::isnan(y_each[i]);
    if (!(y_strips[i] == y_each[i] || (std::isnan(y_strips[i]) && std::isnan(y_each[i]))))
      ++differing;
  }
  EXPECT_EQ(differing, 0u) << "of " << out_numel << " outputs";
  EXPECT_EQ(nans > 0, c.nan);
}

const PoolKind kMax = PoolKind::max, kAvg = PoolKind::avg;

INSTANTIATE_TEST_SUITE_P(
    Kernels, Pooling,
    ::testing::Values(
        PoolCase{"max1d_k3_s2_p1", kMax, 6, {37}, {3}, {2}, {1}, {1}, {}},
        PoolCase{"max1d_dilated_ceil", kMax, 4, {30}, {4}, {3}, {2}, {2}, {}, true},
        strips(tiled(PoolCase{
            "max2d_tiling", kMax, 8, {16, 16}, {2, 2}, {2, 2}, {0, 0}, {1, 1}, {}})),
        strips(tiled(PoolCase{
            "max2d_k4_s1_p1", kMax, 3, {20, 18}, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {}})),
        // SqueezeNet's pools: 3x3 stride 2, ceil mode; partial strips at both edges.
        strips(tiled(PoolCase{
            "max2d_k3_s2_ceil", kMax, 6, {27, 31}, {3, 3}, {2, 2}, {0, 0}, {1, 1}, {}, true})),
        strips(tiled(PoolCase{"max2d_k3_s2_p1_nan",
                              kMax,
                              3,
                              {18, 22},
                              {3, 3},
                              {2, 2},
                              {1, 1},
                              {1, 1},
                              {},
                              false,
                              true,
                              0,
                              false,
                              true})),
        strips(tiled(PoolCase{"max2d_k3_s1_p1_transposed",
                              kMax,
                              2,
                              {13, 10},
                              {3, 3},
                              {1, 1},
                              {1, 1},
                              {1, 1},
                              {},
                              false,
                              true,
                              0,
                              true})),
        // Too few columns for a tile; a strip of 4 x 4 outputs still covers most of a plane.
        strips(PoolCase{
            "max2d_k3_s1_p1_small_plane", kMax, 7, {5, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}}),
        // 9,600 tiles: more than a grid's blocks, which then take several tiles each; 21 output
        // rows, so a thread's second row is past the end (at 3x3 the two share their rows).
        strips(tiled(PoolCase{"max2d_k3_s1_p1_many_tiles",
                              kMax,
                              2400,
                              {21, 40},
                              {3, 3},
                              {1, 1},
                              {1, 1},
                              {1, 1},
                              {}})),
        // A 48 x 96 region: more cells than one round of staging loads covers.
        tiled(PoolCase{
            "max2d_k3_s3_wide_region", kMax, 3, {50, 100}, {3, 3}, {3, 3}, {0, 0}, {1, 1}, {}}),
        tiled(PoolCase{
            "max2d_k3_s2_p1_d3_ceil", kMax, 5, {33, 29}, {3, 3}, {2, 2}, {1, 1}, {3, 3}, {}, true}),
        tiled(PoolCase{"max2d_transposed_nan",
                       kMax,
                       2,
                       {9, 11},
                       {3, 2},
                       {2, 1},
                       {1, 0},
                       {1, 2},
                       {},
                       false,
                       true,
                       0,
                       true,
                       true}),
        PoolCase{"max3d_k3_s2_p1_d3",
                 kMax,
                 4,
                 {17, 16, 15},
                 {3, 3, 3},
                 {2, 2, 2},
                 {1, 1, 1},
                 {3, 3, 3},
                 {}},
        PoolCase{"avg1d_k4_s2_p2", kAvg, 5, {31}, {4}, {2}, {2}, {}, {}},
        tiled(PoolCase{"avg2d_exclude_pad_ceil",
                       kAvg,
                       3,
                       {17, 14},
                       {3, 3},
                       {2, 2},
                       {1, 1},
                       {},
                       {},
                       true,
                       false}),
        tiled(PoolCase{
            "avg2d_divisor", kAvg, 3, {12, 12}, {3, 2}, {3, 1}, {1, 1}, {}, {}, false, true, 5}),
        PoolCase{"avg2d_transposed",
                 kAvg,
                 2,
                 {10, 13},
                 {2, 3},
                 {2, 2},
                 {0, 1},
                 {},
                 {},
                 false,
                 true,
                 0,
                 true},
        PoolCase{"avg3d_k3_s2_p1", kAvg, 4, {16, 16, 18}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {}, {}},
        PoolCase{"avg3d_ceil_exclude_pad",
                 kAvg,
                 2,
                 {9, 10, 11},
                 {2, 3, 2},
                 {2, 2, 3},
                 {1, 1, 1},
                 {},
                 {},
                 true,
                 false},
        strips(tiled(PoolCase{
            "max2d_k3_s1_p1_ragged_tiles", kMax, 2, {37, 70}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {}})),
        tiled(PoolCase{"avg2d_k3_s2_p1_exclude_pad_ragged_tiles",
                       kAvg,
                       3,
                       {35, 67},
                       {3, 3},
                       {2, 2},
                       {1, 1},
                       {},
                       {},
                       false,
                       false}),
        tiled(PoolCase{"max2d_k3_s2_p1_d2_ceil_ragged_tiles",
                       kMax,
                       2,
                       {41, 75},
                       {3, 3},
                       {2, 2},
                       {1, 1},
                       {2, 2},
                       {},
                       true}),
        // A region of 112 x 224 cells is past the tiled path's shared-memory budget.
        PoolCase{
            "max2d_k7_s7_region_too_big", kMax, 2, {56, 112}, {7, 7}, {7, 7}, {0, 0}, {1, 1}, {}},
        PoolCase{"adaptive_avg2d_7x5", PoolKind::adaptive_avg, 6, {23, 17}, {}, {}, {}, {}, {7, 5}},
        PoolCase{
            "adaptive_avg2d_global", PoolKind::adaptive_avg, 6, {9, 9}, {}, {}, {}, {}, {1, 1}},
        PoolCase{"adaptive_avg3d_upsampling",
                 PoolKind::adaptive_avg,
                 2,
                 {3, 4, 5},
                 {},
                 {},
                 {},
                 {},
                 {4, 6, 7}},
        PoolCase{"adaptive_max2d_6x4", PoolKind::adaptive_max, 5, {19, 13}, {}, {}, {}, {}, {6, 4}},
        PoolCase{"adaptive_max1d", PoolKind::adaptive_max, 5, {50}, {}, {}, {}, {}, {7}},
        channels_last(
            PoolCase{"max2d_k3_s2_p1", kMax, 2 * 12, {13, 11}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {}},
            12),
        channels_last(PoolCase{"max3d_k2_s2",
                               kMax,
                               3 * 8,
                               {6, 7, 8},
                               {2, 2, 2},
                               {2, 2, 2},
                               {0, 0, 0},
                               {1, 1, 1},
                               {}},
                      8),
        channels_last(
            PoolCase{"avg2d_k3_s2_p1", kAvg, 2 * 20, {15, 9}, {3, 3}, {2, 2}, {1, 1}, {}, {}}, 20),
        channels_last(PoolCase{"adaptive_avg2d_3x2",
                               PoolKind::adaptive_avg,
                               4 * 6,
                               {11, 7},
                               {},
                               {},
                               {},
                               {},
                               {3, 2}},
                      6)),
    testing::case_name<PoolCase>);

TEST(PoolingArguments, BadShapesAreRejectedAndEmptyOutputsLaunchNothing) {
  REQUIRE_GPU();
  PoolShape s;
  s.kernel[2] = 0;
  const PoolLoad load{nullptr, 1, 1, 1, false};
  const PoolStore store{nullptr, nullptr};
  EXPECT_EQ((launch_pool<PoolKind::max>(s, load, store, nullptr)), cudaErrorInvalidValue);
  PoolShape ragged;
  ragged.outer = 10;
  ragged.channels = 4;  // not a whole number of images
  EXPECT_EQ((launch_pool<PoolKind::max>(ragged, load, store, nullptr)), cudaErrorInvalidValue);
  PoolShape empty;
  empty.outer = 0;
  EXPECT_EQ((launch_pool<PoolKind::avg>(empty, load, store, nullptr)), cudaSuccess);
  // A compile-time window size the shape does not have.
  PoolShape two;
  two.kernel[1] = two.kernel[2] = 2;
  EXPECT_EQ((launch_pool<PoolKind::max, 3, 3>(two, load, store, nullptr)), cudaErrorInvalidValue);
  EXPECT_EQ((launch_pool<PoolKind::max, 2, 3>(two, load, store, nullptr)), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace stitch::kernels
