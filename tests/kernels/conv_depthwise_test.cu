// kernels/conv_depthwise.cuh on the GPU against a double-precision CPU convolution: square and
// asymmetric kernels, stride, asymmetric padding, dilation, a channel multiplier; FP32 to a few
// ulps of the sum of |terms|. Plus the shape checks, which need no GPU.
#include <cmath>
#include <string>
#include <vector>

#include "kernel_test_support.cuh"
#include "kernels/conv_depthwise.cuh"

namespace stitch::kernels {
namespace {

using testing::all_close;
using testing::DeviceBuffer;
using testing::Tolerance;

struct DepthwiseCase {
  std::string name;
  DepthwiseConv2dShape shape;
};

DepthwiseConv2dShape shape_of(int64_t batch, int64_t channels, int64_t multiplier, int64_t h,
                              int64_t w, int64_t kh, int64_t kw, int64_t stride, int64_t top,
                              int64_t left, int64_t bottom, int64_t right, int64_t dilation) {
  DepthwiseConv2dShape s;
  s.batch = batch, s.channels = channels, s.multiplier = multiplier;
  s.in_h = h, s.in_w = w, s.kernel_h = kh, s.kernel_w = kw;
  s.stride_h = s.stride_w = stride, s.dilation_h = s.dilation_w = dilation;
  s.pad_top = top, s.pad_left = left, s.pad_bottom = bottom, s.pad_right = right;
  s.out_h = (h + top + bottom - dilation * (kh - 1) - 1) / stride + 1;
  s.out_w = (w + left + right - dilation * (kw - 1) - 1) / stride + 1;
  return s;
}

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
  const auto w = testing::uniform_floats(s.channels * s.multiplier * s.kernel_h * s.kernel_w, 2,
                                         -1.f, 1.f);
  std::vector<double> scale;
  const std::vector<double> expected = reference(s, x, w, &scale);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(expected.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));  // NaN: every output written
  ASSERT_CUDA(launch_depthwise_conv2d(dx.data(), dw.data(), dy.data(), s, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(all_close(dy.download(), expected, Tolerance{1e-6, 0, 1e-6}, &scale))
      << GetParam().name;
}

const DepthwiseCase kCases[] = {
    {"k3_pad1", shape_of(2, 16, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1)},
    {"k5_stride2_asymmetric_pad", shape_of(2, 8, 1, 17, 12, 5, 5, 2, 2, 1, 1, 2, 1)},
    {"asymmetric_kernel_dilation2", shape_of(1, 6, 1, 20, 16, 3, 5, 1, 2, 4, 2, 4, 2)},
    {"multiplier3", shape_of(2, 4, 3, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1)},
    {"wide_rows", shape_of(1, 3, 1, 5, 300, 3, 3, 1, 0, 0, 0, 0, 1)},
};

INSTANTIATE_TEST_SUITE_P(Shapes, DepthwiseTest, ::testing::ValuesIn(kCases),
                         testing::case_name<DepthwiseCase>);

TEST(DepthwiseShapeCheck, RefusesShapesThatDoNotFollow) {
  DepthwiseConv2dShape s = shape_of(1, 4, 1, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1);
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
