// kernels/conv_igemm_tf32x3.cuh on a GPU against a double-precision CPU convolution, over the
// shape table of conv_igemm_cases.cuh (1x1, 3x3 stride 1 / 2, 5x5 pad 2, the ResNet stem,
// dilation, asymmetric padding, odd channel counts, a 1x1 output, batch 8, 1-d, 3-d, groups, long
// K, bias + ReLU / GELU epilogues). Per element: the GEMM tests' 3xTF32 bound (1e-6 + 2e-5 of the
// sum of |terms|, strict FP32's doubled: TF32 alone fails it); over the output: the relative error
// norm under 1e-6 (3xTF32 at FP32 level: the GEMM kernel measured 1.2e-7 to 3.3e-7; plain TF32
// gives ~1e-4, the fp32 track's bound is 5e-5) and the largest absolute error is reported. The
// output starts as NaN: every element must be written. Label gpu; skips without a device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv_igemm_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"

namespace stitch::kernels {
namespace {

using testing::all_close;
using testing::ConvIgemmCase;
using testing::DeviceBuffer;
using testing::Tolerance;

constexpr double kNormBound = 1e-6;

// The convolution in double, with the epilogue, and per element the sum of |terms| (bias
// included) as the tolerance's scale.
std::vector<double> reference(const ConvIgemmCase& c, const std::vector<float>& x,
                              const std::vector<float>& w, const std::vector<float>& bias,
                              std::vector<double>* scale) {
  const ConvIgemmShape& s = c.shape;
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  const int64_t cin = s.in_channels / s.groups, cout = s.out_channels / s.groups;
  const int64_t in_plane = d.input[0] * d.input[1] * d.input[2];
  const int64_t out_plane = d.output[0] * d.output[1] * d.output[2];
  const int64_t volume = d.kernel[0] * d.kernel[1] * d.kernel[2];
  std::vector<double> y(testing::conv_output_elements(s), 0.0);
  scale->assign(y.size(), 0.0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t co = 0; co < s.out_channels; ++co)
      for (int64_t o = 0; o < out_plane; ++o) {
        const int64_t out[3] = {o / (d.output[1] * d.output[2]), o / d.output[2] % d.output[1],
                                o % d.output[2]};
        const int64_t group = co / cout;
        double sum = 0.0, magnitude = 0.0;
        for (int64_t ci = 0; ci < cin; ++ci)
          for (int64_t tap = 0; tap < volume; ++tap) {
            const int64_t k[3] = {tap / (d.kernel[1] * d.kernel[2]),
                                  tap / d.kernel[2] % d.kernel[1], tap % d.kernel[2]};
            int64_t at = 0;
            bool inside = true;
            for (int i = 0; i < 3 && inside; ++i) {
              const int64_t in = out[i] * d.stride[i] - d.pad[i] + k[i] * d.dilation[i];
              inside = in >= 0 && in < d.input[i];
              at = at * d.input[i] + in;
            }
            if (!inside) continue;
            const double term =
                static_cast<double>(x[(n * s.in_channels + group * cin + ci) * in_plane + at]) *
                w[(co * cin + ci) * volume + tap];
            sum += term;
            magnitude += std::fabs(term);
          }
        if (epilogue_has_bias(c.epilogue)) {
          sum += bias[co];
          magnitude += std::fabs(bias[co]);
        }
        if (c.epilogue == MatmulEpilogue::bias_relu || c.epilogue == MatmulEpilogue::relu)
          sum = std::max(sum, 0.0);
        if (c.epilogue == MatmulEpilogue::bias_gelu || c.epilogue == MatmulEpilogue::gelu)
          sum = testing::gelu_tanh(sum);
        const int64_t yi = (n * s.out_channels + co) * out_plane + o;
        y[yi] = sum;
        (*scale)[yi] = magnitude;
      }
  return y;
}

class ConvIgemmTest : public ::testing::TestWithParam<ConvIgemmCase> {};

TEST_P(ConvIgemmTest, MatchesTheDoubleReference) {
  REQUIRE_GPU();
  const ConvIgemmCase& c = GetParam();
  const ConvIgemmShape& s = c.shape;
  ASSERT_EQ(conv_igemm_shape_problem(s), "");
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 11, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 12, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 13, -1.f, 1.f);
  std::vector<double> scale;
  const std::vector<double> expected = reference(c, x, w, bias, &scale);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), db(bias.size()), dy(expected.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));  // NaN: every output written
  ASSERT_CUDA(prepare_conv_igemm_tf32x3());
  ASSERT_CUDA(
      launch_conv_igemm_tf32x3(dx.data(), dw.data(), db.data(), dy.data(), s, c.epilogue, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> y = dy.download();
  const bool gelu = c.epilogue == MatmulEpilogue::bias_gelu;
  EXPECT_TRUE(
      all_close(y, expected, gelu ? Tolerance{1e-5, 5e-5, 2e-5} : Tolerance{1e-6, 0, 2e-5}, &scale))
      << c.name;
  double diff = 0.0, norm = 0.0, max_abs = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double e = y[i] - expected[i];
    diff += e * e;
    norm += expected[i] * expected[i];
    max_abs = std::max(max_abs, std::fabs(e));
  }
  const double error_norm = std::sqrt(diff / std::max(norm, 1e-300));
  std::printf("[ conv_igemm ] %s: relative error norm %.3g, max abs error %.3g\n", c.name.c_str(),
              error_norm, max_abs);
  EXPECT_LE(error_norm, kNormBound) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIgemmTest, ::testing::ValuesIn(testing::conv_igemm_cases()),
                         testing::case_name<ConvIgemmCase>);

// Misaligned weights (16-byte loads impossible) take the 4-byte path and give the same result.
TEST(ConvIgemmTest, UnalignedWeightsTakeTheScalarLoads) {
  REQUIRE_GPU();
  const ConvIgemmShape s =
      testing::conv_case_shape(1, 16, 20, 1, {10, 10}, {3}, {1}, {1});  // K = 144
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 21, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 22, -1.f, 1.f);
  std::vector<float> shifted(w.size() + 1, 0.0f);
  std::copy(w.begin(), w.end(), shifted.begin() + 1);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), dw_shifted(shifted.size()),
      dy(testing::conv_output_elements(s)), dy_shifted(dy.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(dw_shifted.upload(shifted));
  ASSERT_CUDA(prepare_conv_igemm_tf32x3());
  ASSERT_CUDA(launch_conv_igemm_tf32x3(dx.data(), dw_shifted.data() + 1, nullptr, dy_shifted.data(),
                                       s, MatmulEpilogue::none, nullptr));
  ASSERT_CUDA(launch_conv_igemm_tf32x3(dx.data(), dw.data(), nullptr, dy.data(), s,
                                       MatmulEpilogue::none, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(testing::bitwise_equal(dy.download(), dy_shifted.download()));
}

}  // namespace
}  // namespace stitch::kernels
