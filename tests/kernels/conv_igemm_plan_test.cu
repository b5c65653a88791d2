// The host-checkable half of kernels/conv_igemm_tf32x3.cuh, without a GPU (label unit): the
// kernel's own gather code (gather_conv_tile, run here with a recording sink for every thread of a
// block) must give every A tile element exactly once, equal to a direct im2col of the input (zero
// for padding and past K), and conv_output_offset must place every GEMM element on its own output
// element; plus the shape checks and the launcher's argument checks. Every shape of the GPU test's
// table (conv_igemm_cases.cuh).
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv_igemm_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"

namespace stitch::kernels {
namespace {

using testing::ConvIgemmCase;

// A[m, k] of group `group` by the definition: the input under output position m's window tap k.
float im2col(const ConvIgemmShape& s, const std::vector<float>& x, int group, int64_t m,
             int64_t k) {
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  const int64_t channels = s.in_channels / s.groups;
  const int64_t volume = d.kernel[0] * d.kernel[1] * d.kernel[2];
  const int64_t plane = d.output[0] * d.output[1] * d.output[2];
  if (m >= s.batch * plane || k >= channels * volume) return 0.0f;
  const int64_t image = m / plane, o = m % plane, c = k / volume, tap = k % volume;
  const int64_t out[3] = {o / (d.output[1] * d.output[2]), o / d.output[2] % d.output[1],
                          o % d.output[2]};
  const int64_t kernel[3] = {tap / (d.kernel[1] * d.kernel[2]), tap / d.kernel[2] % d.kernel[1],
                             tap % d.kernel[2]};
  int64_t at = image * s.in_channels + group * channels + c;
  for (int i = 0; i < 3; ++i) {
    const int64_t in = out[i] * d.stride[i] - d.pad[i] + kernel[i] * d.dilation[i];
    if (in < 0 || in >= d.input[i]) return 0.0f;
    at = at * d.input[i] + in;
  }
  return x[at];
}

class ConvIgemmGather : public ::testing::TestWithParam<ConvIgemmCase> {};

TEST_P(ConvIgemmGather, EveryTileElementIsTheIm2colElementOnce) {
  const ConvIgemmShape& s = GetParam().shape;
  ASSERT_EQ(conv_igemm_shape_problem(s), "");
  std::vector<float> x(testing::conv_input_elements(s));
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i + 1);  // distinct and exact: a wrong address shows
  const detail::ConvIgemmParams p =
      detail::conv_igemm_params(x.data(), x.data(), nullptr, nullptr, s, MatmulEpilogue::none);
  constexpr int kRows = detail::kGemmBM, kColumns = detail::kGemmBK;
  int mismatches = 0;
  for (int group = 0; group < s.groups; ++group)
    for (int tm = 0; tm < p.tiles_m; ++tm)
      for (int k0 = 0; k0 < p.k; k0 += kColumns) {
        std::vector<float> tile(kRows * kColumns, -1.0f);
        std::vector<int> writes(kRows * kColumns, 0);
        for (int thread = 0; thread < detail::kGemmThreads; ++thread) {
          const int warp = thread / 32, lane = thread % 32;
          const int row = warp * 8 + (lane & 7), column = lane >> 3;  // as the kernel assigns
          detail::ConvIgemmRow rows[2];
          rows[0].start(p, tm * kRows + row, group);
          rows[1].start(p, tm * kRows + row + 64, group);
          detail::gather_conv_tile(p, rows, row, column, k0,
                                   [&](int r, int c, const float* src, bool ok) {
                                     ASSERT_TRUE(r >= 0 && r < kRows && c >= 0 && c < kColumns);
                                     ++writes[r * kColumns + c];
                                     tile[r * kColumns + c] = ok ? *src : 0.0f;
                                   });
        }
        for (int r = 0; r < kRows; ++r)
          for (int c = 0; c < kColumns; ++c) {
            const float want = im2col(s, x, group, int64_t{tm} * kRows + r, k0 + c);
            const bool ok = writes[r * kColumns + c] == 1 && tile[r * kColumns + c] == want;
            if (!ok && mismatches++ < 5)
              ADD_FAILURE() << "group " << group << " m " << tm * kRows + r << " k " << k0 + c
                            << ": written " << writes[r * kColumns + c] << "x, got "
                            << tile[r * kColumns + c] << ", want " << want;
          }
      }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(ConvIgemmGather, EveryGemmElementHasItsOwnOutputElement) {
  const ConvIgemmShape& s = GetParam().shape;
  const detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr, s, MatmulEpilogue::none);
  const int64_t outputs = testing::conv_output_elements(s);
  ASSERT_EQ(int64_t{p.m} * p.n * s.groups, outputs);
  std::vector<int> hits(outputs, 0);
  const int64_t plane = p.out_plane;
  for (int group = 0; group < s.groups; ++group)
    for (int m = 0; m < p.m; ++m)
      for (int co = 0; co < p.n; ++co) {
        const int64_t at = detail::conv_output_offset(p, group, m, co);
        const int64_t want = (m / plane * s.out_channels + group * p.n + co) * plane + m % plane;
        ASSERT_EQ(at, want) << "group " << group << " m " << m << " co " << co;
        ++hits[at];
      }
  for (int64_t i = 0; i < outputs; ++i)
    ASSERT_EQ(hits[i], 1) << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIgemmGather, ::testing::ValuesIn(testing::conv_igemm_cases()),
                         testing::case_name<ConvIgemmCase>);

TEST(ConvIgemmShapeCheck, RefusesShapesItCannotRun) {
  ConvIgemmShape s = testing::conv_case_shape(1, 4, 8, 1, {8, 8}, {3}, {1}, {1});
  EXPECT_EQ(conv_igemm_shape_problem(s), "");
  ConvIgemmShape wrong_output = s;
  wrong_output.output[1] = 9;
  EXPECT_NE(conv_igemm_shape_problem(wrong_output), "");
  ConvIgemmShape uneven_groups = s;
  uneven_groups.groups = 3;
  EXPECT_NE(conv_igemm_shape_problem(uneven_groups), "");
  ConvIgemmShape negative_pad = s;
  negative_pad.pad_before[0] = -1;
  EXPECT_NE(conv_igemm_shape_problem(negative_pad), "");
  ConvIgemmShape huge = testing::conv_case_shape(1, 1024, 8, 1, {2048, 2048}, {1});
  EXPECT_NE(conv_igemm_shape_problem(huge), "");  // one image's input past int32
  ConvIgemmShape four_d = s;
  four_d.spatial = 4;
  EXPECT_NE(conv_igemm_shape_problem(four_d), "");
  // The launcher checks before it touches the device.
  float buffer = 0.0f;
  EXPECT_EQ(launch_conv_igemm_tf32x3(nullptr, &buffer, nullptr, &buffer, s, MatmulEpilogue::none,
                                     nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_conv_igemm_tf32x3(&buffer, &buffer, nullptr, &buffer, s, MatmulEpilogue::bias,
                                     nullptr),
            cudaErrorInvalidValue);  // a bias epilogue without a bias
  EXPECT_EQ(launch_conv_igemm_tf32x3(&buffer, &buffer, nullptr, &buffer, wrong_output,
                                     MatmulEpilogue::none, nullptr),
            cudaErrorInvalidValue);
}

TEST(ConvIgemmShapeCheck, ParamsOfTheResNetStem) {
  const ConvIgemmShape s = testing::conv_case_shape(2, 3, 64, 1, {224, 224}, {7}, {2}, {3});
  const detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr, s, MatmulEpilogue::none);
  EXPECT_EQ(p.m, 2 * 112 * 112);
  EXPECT_EQ(p.n, 64);
  EXPECT_EQ(p.k, 3 * 49);
  EXPECT_EQ(p.tiles_m, (2 * 112 * 112 + 127) / 128);
  EXPECT_EQ(p.tiles_n, 1);
  EXPECT_EQ(p.in[0], 1);  // 2-d as 3-d with a unit depth
  EXPECT_EQ(p.in[1], 224);
  EXPECT_EQ(p.pad[2], 3);
  EXPECT_EQ(p.x_image, 3 * 224 * 224);
  EXPECT_EQ(p.y_image, 64 * 112 * 112);
}

}  // namespace
}  // namespace stitch::kernels
