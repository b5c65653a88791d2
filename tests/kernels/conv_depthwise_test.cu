// kernels/conv_depthwise.cuh on the GPU against a double-precision CPU convolution over the shape
// table of conv_depthwise_cases.cuh (every tiled variant, the tiling edges, the simple kernel's
// fallback), each with x 16-byte aligned (16-byte copies where rows allow) and one float off
// (4-byte copies); FP32 to a few ulps of the sum of |terms|. Plus the shape checks, which need no
// GPU.
#include <cmath>
#include <string>
#include <vector>

#include "conv_depthwise_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_depthwise.cuh"

namespace stitch::kernels {
namespace {

using testing::all_close;
using testing::DepthwiseCase;
using testing::DeviceBuffer;
using testing::Tolerance;

std::vector<double> reference(const DepthwiseConv2dShape& s, const std::vector<float>& x,
                              const std::vector<float>& w, std::vector<double>* scale) {
  const int64_t out_channels = s.channels * s.multiplier;
  std::vector<double> y(s.batch * out_channels * s.out_h * s.out_w, 0.0);
  scale->assign(y.size(), 0.0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t k = 0; k < out_channels; ++k)
      for (int64_t oh = 0; oh < s.out_h; ++oh)
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          const int64_t yi = ((n * out_channels + k) * s.out_h + oh) * s.out_w + ow;
          for (int64_t i = 0; i < s.kernel_h; ++i)
            for (int64_t j = 0; j < s.kernel_w; ++j) {
              const int64_t ih = oh * s.stride_h - s.pad_top + i * s.dilation_h;
              const int64_t iw = ow * s.stride_w - s.pad_left + j * s.dilation_w;
              if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
              const double term =
                  static_cast<double>(
                      x[((n * s.channels + k / s.multiplier) * s.in_h + ih) * s.in_w + iw]) *
                  w[(k * s.kernel_h + i) * s.kernel_w + j];
              y[yi] += term;
              (*scale)[yi] += std::fabs(term);
            }
        }
  return y;
}

class DepthwiseTest : public ::testing::TestWithParam<DepthwiseCase> {};

TEST_P(DepthwiseTest, MatchesTheDoubleReference) {
  REQUIRE_GPU();
  const DepthwiseConv2dShape& s = GetParam().shape;
  ASSERT_EQ(depthwise_shape_problem(s), "");
  const auto x = testing::uniform_floats(s.batch * s.channels * s.in_h * s.in_w, 1, -1.f, 1.f);
  const auto w =
      testing::uniform_floats(s.channels * s.multiplier * s.kernel_h * s.kernel_w, 2, -1.f, 1.f);
  std::vector<double> scale;
  const std::vector<double> expected = reference(s, x, w, &scale);
  DeviceBuffer<float> dx(x.size() + 1), dw(w.size()), dy(expected.size());
  ASSERT_CUDA(dw.upload(w));
  for (int offset : {0, 1}) {  // cudaMalloc's alignment, then 4-byte aligned only
    SCOPED_TRACE(offset == 0 ? "x 16-byte aligned" : "x one float off");
    ASSERT_CUDA(
        cudaMemcpy(dx.data() + offset, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
    ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));  // NaN: all written
    ASSERT_CUDA(launch_depthwise_conv2d(dx.data() + offset, dw.data(), dy.data(), s, nullptr));
    ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(all_close(dy.download(), expected, Tolerance{1e-6, 0, 1e-6}, &scale))
        << GetParam().name;
  }
}

// The same with an input transform (a fused BatchNorm + ReLU6, tiled and simple kernels): the
// reference convolves the transformed input, padding zero.
TEST_P(DepthwiseTest, TransformsTheInputButNotThePadding) {
  REQUIRE_GPU();
  const DepthwiseConv2dShape& s = GetParam().shape;
  const auto x = testing::uniform_floats(s.batch * s.channels * s.in_h * s.in_w, 3, -1.f, 1.f);
  const auto w =
      testing::uniform_floats(s.channels * s.multiplier * s.kernel_h * s.kernel_w, 4, -1.f, 1.f);
  const testing::PlaneAffineRelu6 transform{s.channels};
  std::vector<double> scale;
  const std::vector<double> expected =
      reference(s, testing::transformed(s, x, transform), w, &scale);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(expected.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));
  ASSERT_CUDA(launch_depthwise_conv2d(dx.data(), dw.data(), dy.data(), s, nullptr, 256, transform));
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(all_close(dy.download(), expected, Tolerance{1e-6, 0, 1e-6}, &scale))
      << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, DepthwiseTest, ::testing::ValuesIn(testing::depthwise_cases()),
                         testing::case_name<DepthwiseCase>);

TEST(DepthwiseShapeCheck, RefusesShapesThatDoNotFollow) {
  DepthwiseConv2dShape s = testing::depthwise_case_shape(1, 4, 1, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1);
  EXPECT_EQ(depthwise_shape_problem(s), "");
  DepthwiseConv2dShape wrong = s;
  wrong.out_w = 9;
  EXPECT_NE(depthwise_shape_problem(wrong), "");
  DepthwiseConv2dShape negative = s;
  negative.pad_left = -1;
  EXPECT_NE(depthwise_shape_problem(negative), "");
  EXPECT_EQ(launch_depthwise_conv2d(nullptr, nullptr, nullptr, s, nullptr), cudaErrorInvalidValue);
}

}  // namespace
}  // namespace stitch::kernels
