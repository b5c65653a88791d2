// kernels/conv.cuh on the GPU against a double-precision CPU convolution: 1-D, 2-D and 3-D, stride,
// asymmetric padding, dilation, groups and depthwise, transposed with output padding; strict FP32
// to FP32 rounding, TF32 to TF32's. Plus the argument checks, which need no GPU.
#include <cudnn.h>

#include <string>
#include <utility>
#include <vector>

#include "kernel_test_support.cuh"
#include "kernels/conv.cuh"

namespace stitch::kernels {
namespace {

using testing::all_close;
using testing::DeviceBuffer;
using testing::transpose_batched;
using testing::Tolerance;

struct ConvCase {
  std::string name;
  ConvShape shape;
  ConvMath math = ConvMath::strict_fp32;
};

// Output size of the forward convolution over `in` (PyTorch's formula, floor mode).
int64_t forward_size(int64_t in, int64_t k, int64_t s, int64_t before, int64_t after, int64_t d) {
  return (in + before + after - d * (k - 1) - 1) / s + 1;
}

ConvShape shape_of(int spatial, int64_t batch, int64_t c, int64_t k, int64_t groups,
                   std::vector<int64_t> in, std::vector<int64_t> kernel, int64_t stride,
                   std::vector<int64_t> before, std::vector<int64_t> after, int64_t dilation,
                   bool transposed = false, int64_t output_padding = 0) {
  ConvShape s;
  s.spatial = spatial;
  s.batch = batch, s.in_channels = c, s.out_channels = k, s.groups = groups;
  s.transposed = transposed;
  for (int i = 0; i < spatial; ++i) {
    s.input[i] = in[i], s.kernel[i] = kernel[i], s.stride[i] = stride;
    s.pad_before[i] = before[i], s.pad_after[i] = after[i], s.dilation[i] = dilation;
    s.output[i] = transposed ? (in[i] - 1) * stride - before[i] - after[i] +
                                   dilation * (kernel[i] - 1) + output_padding + 1
                             : forward_size(in[i], kernel[i], stride, before[i], after[i], dilation);
  }
  return s;
}

int64_t product(const int64_t* v, int n) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= v[i];
  return p;
}

// The forward convolution from `src` (channels cs, sizes ss) to `dst` (cd, sd), weight indexed
// [dst channel][src channel / group][k...] — or, transposed, scattered: each src element adds
// into the dst elements its window covers, weight [src channel][dst channel / group][k...].
std::vector<double> reference(const ConvShape& s, const std::vector<float>& x,
                              const std::vector<float>& w, std::vector<double>* scale) {
  const int n = s.spatial;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t st[3] = {1, 1, 1}, pb[3] = {0, 0, 0}, dl[3] = {1, 1, 1};
  for (int i = 0; i < n; ++i)
    in[i] = s.input[i], out[i] = s.output[i], k[i] = s.kernel[i], st[i] = s.stride[i],
    pb[i] = s.pad_before[i], dl[i] = s.dilation[i];
  const int64_t cin_g = s.in_channels / s.groups, cout_g = s.out_channels / s.groups;
  std::vector<double> y(s.batch * s.out_channels * product(out, 3), 0.0);
  scale->assign(y.size(), 0.0);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t ci = 0; ci < s.in_channels; ++ci)
      for (int64_t i0 = 0; i0 < in[0]; ++i0)
        for (int64_t i1 = 0; i1 < in[1]; ++i1)
          for (int64_t i2 = 0; i2 < in[2]; ++i2) {
            const double xv = x[(((b * s.in_channels + ci) * in[0] + i0) * in[1] + i1) * in[2] + i2];
            const int64_t g = ci / cin_g;
            for (int64_t co = g * cout_g; co < (g + 1) * cout_g; ++co)
              for (int64_t k0 = 0; k0 < k[0]; ++k0)
                for (int64_t k1 = 0; k1 < k[1]; ++k1)
                  for (int64_t k2 = 0; k2 < k[2]; ++k2) {
                    // Forward: y[o] += x[o*st - pb + k*dl] w — solved for o from i; transposed:
                    // y[i*st - pb + k*dl] += x[i] w.
                    int64_t o[3];
                    bool inside = true;
                    const int64_t idx[3] = {i0, i1, i2}, kk[3] = {k0, k1, k2};
                    for (int d = 0; d < 3 && inside; ++d) {
                      if (s.transposed) {
                        o[d] = idx[d] * st[d] - pb[d] + kk[d] * dl[d];
                        inside = o[d] >= 0 && o[d] < out[d];
                      } else {
                        const int64_t num = idx[d] + pb[d] - kk[d] * dl[d];
                        inside = num >= 0 && num % st[d] == 0 && num / st[d] < out[d];
                        o[d] = num / st[d];
                      }
                    }
                    if (!inside) continue;
                    const int64_t wi =
                        s.transposed
                            ? (((ci * cout_g + (co - g * cout_g)) * k[0] + k0) * k[1] + k1) * k[2] + k2
                            : (((co * cin_g + (ci - g * cin_g)) * k[0] + k0) * k[1] + k1) * k[2] + k2;
                    const int64_t yi =
                        (((b * s.out_channels + co) * out[0] + o[0]) * out[1] + o[1]) * out[2] + o[2];
                    y[yi] += xv * w[wi];
                    (*scale)[yi] += std::fabs(xv * w[wi]);
                  }
          }
  return y;
}

class ConvTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvTest, MatchesTheDoubleReference) {
  REQUIRE_GPU();
  const ConvCase& c = GetParam();
  const ConvShape& s = c.shape;
  const int64_t w_out = s.transposed ? s.in_channels : s.out_channels;
  const int64_t w_in = (s.transposed ? s.out_channels : s.in_channels) / s.groups;
  const auto x = testing::uniform_floats(s.batch * s.in_channels * product(s.input, s.spatial), 1,
                                         -1.f, 1.f);
  const auto w = testing::uniform_floats(w_out * w_in * product(s.kernel, s.spatial), 2, -1.f, 1.f);
  std::vector<double> scale;
  const std::vector<double> expected = reference(s, x, w, &scale);

  cudnnHandle_t handle = nullptr;
  ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(expected.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  constexpr size_t kWorkspace = 64 << 20;
  DeviceBuffer<char> workspace(kWorkspace);
  CudnnConv conv;
  std::string error;
  ASSERT_EQ(conv.init(handle, s, c.math, kWorkspace, error), STITCH_OK) << error;
  EXPECT_GT(conv.candidates(), 0);
  ASSERT_EQ(conv.tune(dx.data(), dw.data(), dy.data(), workspace.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));  // NaN: every output written
  ASSERT_EQ(conv.run(dx.data(), dw.data(), dy.data(), workspace.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  // FP32: a few ulps of the sum of |terms|; TF32 (10-bit mantissa): about 1e-3 of it.
  const Tolerance tol = c.math == ConvMath::tf32 ? Tolerance{1e-6, 0, 2e-3} : Tolerance{1e-6, 0, 1e-6};
  EXPECT_TRUE(all_close(dy.download(), expected, tol, &scale)) << c.name;
  cudnnDestroy(handle);
}

const ConvCase kCases[] = {
    {"conv2d_pad1", shape_of(2, 2, 8, 16, 1, {12, 10}, {3, 3}, 1, {1, 1}, {1, 1}, 1)},
    {"conv2d_stride2_asymmetric_pad",
     shape_of(2, 2, 4, 8, 1, {11, 9}, {3, 3}, 2, {0, 1}, {2, 0}, 1)},
    {"conv2d_dilation2", shape_of(2, 1, 3, 5, 1, {16, 16}, {3, 3}, 1, {2, 2}, {2, 2}, 2)},
    {"conv2d_groups", shape_of(2, 2, 8, 12, 4, {9, 9}, {3, 3}, 1, {1, 1}, {1, 1}, 1)},
    {"conv2d_depthwise", shape_of(2, 2, 16, 16, 16, {10, 10}, {5, 5}, 1, {2, 2}, {2, 2}, 1)},
    {"conv2d_1x1", shape_of(2, 4, 32, 16, 1, {7, 7}, {1, 1}, 1, {0, 0}, {0, 0}, 1)},
    {"conv1d", shape_of(1, 3, 6, 10, 1, {40}, {5}, 2, {2}, {2}, 1)},
    {"conv3d", shape_of(3, 1, 3, 4, 1, {6, 7, 5}, {3, 3, 2}, 1, {1, 1, 0}, {1, 1, 1}, 1)},
    {"conv_transpose2d_out_pad",
     shape_of(2, 2, 8, 6, 1, {5, 6}, {3, 3}, 2, {1, 1}, {1, 1}, 1, true, 1)},
    {"conv_transpose2d_groups",
     shape_of(2, 1, 6, 9, 3, {7, 7}, {4, 4}, 2, {1, 1}, {1, 1}, 1, true, 0)},
    {"conv_transpose1d", shape_of(1, 2, 4, 3, 1, {9}, {3}, 3, {0}, {0}, 1, true, 2)},
    {"conv_transpose3d",
     shape_of(3, 1, 4, 2, 1, {3, 4, 3}, {3, 3, 3}, 2, {1, 1, 1}, {1, 1, 1}, 1, true, 1)},
    {"conv2d_tf32", shape_of(2, 4, 32, 64, 1, {16, 16}, {3, 3}, 1, {1, 1}, {1, 1}, 1),
     ConvMath::tf32},
};

INSTANTIATE_TEST_SUITE_P(Shapes, ConvTest, ::testing::ValuesIn(kCases),
                         testing::case_name<ConvCase>);

// What a generated program does (src/codegen/subtask_conv.cc): a CudnnHandle, 16-byte alignment
// promised, the engine timed on scratch buffers by tune_conv_on_scratch, then run.
TEST(ConvProgramPath, HandleScratchTuningAndAlignment) {
  REQUIRE_GPU();
  ConvShape s = shape_of(2, 2, 8, 16, 2, {12, 10}, {3, 3}, 2, {1, 0}, {1, 2}, 1);
  s.alignment = 16;
  const auto x = testing::uniform_floats(s.batch * s.in_channels * product(s.input, 2), 3, -1.f,
                                         1.f);
  const auto w = testing::uniform_floats(16 * 4 * 9, 4, -1.f, 1.f);
  std::vector<double> scale;
  const std::vector<double> expected = reference(s, x, w, &scale);
  CudnnHandle handle;
  std::string error;
  ASSERT_EQ(handle.create(error), STITCH_OK) << error;
  DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(expected.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  constexpr size_t kWorkspace = 16 << 20;
  DeviceBuffer<char> workspace(kWorkspace);
  CudnnConv conv;
  ASSERT_EQ(conv.init(handle.get(), s, ConvMath::strict_fp32, kWorkspace, error), STITCH_OK)
      << error;
  ASSERT_EQ(tune_conv_on_scratch(conv, s, workspace.data(), nullptr, error), STITCH_OK) << error;
  EXPECT_GE(conv.tuned_ms(), 0.f);
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));
  ASSERT_EQ(conv.run(dx.data(), dw.data(), dy.data(), workspace.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(all_close(dy.download(), expected, Tolerance{1e-6, 0, 1e-6}, &scale));
}

// y as a window of whole channels of a larger buffer (a cat's piece, ConvShape::y_image): the
// same result as dense, and nothing outside the window written (NaN stays NaN). Forward and
// transposed (cuDNN's backward-data DX takes the strides as well).
TEST(ConvProgramPath, WritesAWindowOfWholeChannels) {
  REQUIRE_GPU();
  for (ConvShape s : {shape_of(2, 2, 8, 16, 1, {12, 10}, {3, 3}, 1, {1, 1}, {1, 1}, 1),
                      shape_of(2, 2, 8, 6, 1, {5, 6}, {3, 3}, 2, {1, 1}, {1, 1}, 1, true, 1)}) {
    s.alignment = 16;
    const int64_t w_out = s.transposed ? s.in_channels : s.out_channels;
    const int64_t w_in = (s.transposed ? s.out_channels : s.in_channels) / s.groups;
    const auto x =
        testing::uniform_floats(s.batch * s.in_channels * product(s.input, 2), 5, -1.f, 1.f);
    const auto w = testing::uniform_floats(w_out * w_in * product(s.kernel, 2), 6, -1.f, 1.f);
    std::vector<double> scale;
    const std::vector<double> expected = reference(s, x, w, &scale);
    // The window: channels 4 .. C + 3 of a buffer of C + 8 per image.
    const int64_t plane = product(s.output, 2), image = s.out_channels * plane;
    const int64_t wide_image = (s.out_channels + 8) * plane, offset = 4 * plane;
    s.y_image = wide_image;
    EXPECT_EQ(conv_y_footprint(s), (s.batch - 1) * wide_image + image);
    CudnnHandle handle;
    std::string error;
    ASSERT_EQ(handle.create(error), STITCH_OK) << error;
    DeviceBuffer<float> dx(x.size()), dw(w.size()), dwide(s.batch * wide_image);
    ASSERT_CUDA(dx.upload(x));
    ASSERT_CUDA(dw.upload(w));
    constexpr size_t kWorkspace = 16 << 20;
    DeviceBuffer<char> workspace(kWorkspace);
    CudnnConv conv;
    ASSERT_EQ(conv.init(handle.get(), s, ConvMath::strict_fp32, kWorkspace, error), STITCH_OK)
        << error;
    ASSERT_EQ(tune_conv_on_scratch(conv, s, workspace.data(), nullptr, error), STITCH_OK) << error;
    ASSERT_CUDA(cudaMemset(dwide.data(), 0xff, dwide.size() * sizeof(float)));
    ASSERT_EQ(
        conv.run(dx.data(), dw.data(), dwide.data() + offset, workspace.data(), nullptr, error),
        STITCH_OK)
        << error;
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> wide = dwide.download();
    std::vector<float> inside;
    int64_t untouched = 0;
    for (int64_t i = 0; i < static_cast<int64_t>(wide.size()); ++i) {
      const int64_t at = i % wide_image - offset;
      if (at >= 0 && at < image)
        inside.push_back(wide[i]);
      else
        untouched += std::isnan(wide[i]) ? 1 : 0;
    }
    EXPECT_EQ(untouched, static_cast<int64_t>(wide.size()) - s.batch * image);
    EXPECT_TRUE(all_close(inside, expected, Tolerance{1e-6, 0, 1e-6}, &scale));
  }
}

// Inside a plan's channels-last region (src/plan/layout.h): x and / or y channels-last, 1-d to
// 3-d, strict FP32 and TF32, the same result as NCDHW (y compared back in NCDHW order).
TEST(ConvProgramPath, ReadsAndWritesChannelsLast) {
  REQUIRE_GPU();
  const ConvCase cases[] = {
      {"conv2d", shape_of(2, 2, 16, 24, 1, {12, 10}, {3, 3}, 1, {1, 1}, {1, 1}, 1)},
      {"conv2d_tf32_stride2", shape_of(2, 2, 32, 64, 1, {16, 16}, {3, 3}, 2, {1, 1}, {1, 1}, 1),
       ConvMath::tf32},
      {"conv1d", shape_of(1, 3, 8, 12, 1, {40}, {5}, 1, {2}, {2}, 1)},
      {"conv3d_tf32", shape_of(3, 1, 8, 16, 1, {6, 7, 5}, {3, 3, 3}, 1, {1, 1, 1}, {1, 1, 1}, 1),
       ConvMath::tf32},
  };
  CudnnHandle handle;
  std::string error;
  ASSERT_EQ(handle.create(error), STITCH_OK) << error;
  constexpr size_t kWorkspace = 64 << 20;
  DeviceBuffer<char> workspace(kWorkspace);
  for (const ConvCase& c : cases) {
    const auto x = testing::uniform_floats(
        c.shape.batch * c.shape.in_channels * product(c.shape.input, c.shape.spatial), 7, -1.f,
        1.f);
    const auto w = testing::uniform_floats(
        c.shape.out_channels * c.shape.in_channels * product(c.shape.kernel, c.shape.spatial), 8,
        -1.f, 1.f);
    std::vector<double> scale;
    const std::vector<double> expected = reference(c.shape, x, w, &scale);
    const Tolerance tol =
        c.math == ConvMath::tf32 ? Tolerance{1e-6, 0, 2e-3} : Tolerance{1e-6, 0, 1e-6};
    const std::pair<bool, bool> layouts[] = {{true, true}, {true, false}, {false, true}};
    for (const auto& [x_last, y_last] : layouts) {
      ConvShape s = c.shape;
      s.alignment = 16;
      s.x_channels_last = x_last, s.y_channels_last = y_last;
      const std::string name = c.name + (x_last ? " x NHWC" : " x NCHW") +
                                (y_last ? " y NHWC" : " y NCHW");
      DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(expected.size());
      const int64_t x_plane = product(s.input, s.spatial), y_plane = product(s.output, s.spatial);
      ASSERT_CUDA(dx.upload(x_last ? transpose_batched(x, s.batch, s.in_channels, x_plane) : x));
      ASSERT_CUDA(dw.upload(w));
      CudnnConv conv;
      ASSERT_EQ(conv.init(handle.get(), s, c.math, kWorkspace, error), STITCH_OK)
          << name << ": " << error;
      ASSERT_EQ(tune_conv_on_scratch(conv, s, workspace.data(), nullptr, error), STITCH_OK)
          << name << ": " << error;
      ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));
      ASSERT_EQ(conv.run(dx.data(), dw.data(), dy.data(), workspace.data(), nullptr, error),
                STITCH_OK)
          << name << ": " << error;
      ASSERT_CUDA(cudaDeviceSynchronize());
      const std::vector<float> y = dy.download();
      EXPECT_TRUE(all_close(y_last ? transpose_batched(y, s.batch, y_plane, s.out_channels) : y,
                            expected, tol, &scale))
          << name;
    }
  }
}

TEST(ConvShapeCheck, ElementCountsAndAlignment) {
  const ConvShape t = shape_of(2, 2, 6, 9, 3, {7, 7}, {4, 4}, 2, {1, 1}, {1, 1}, 1, true, 0);
  int64_t x = 0, w = 0, y = 0;
  conv_elements(t, x, w, y);
  EXPECT_EQ(x, 2 * 6 * 7 * 7);
  EXPECT_EQ(w, 6 * 3 * 4 * 4);  // [in, out / groups, k...]
  EXPECT_EQ(y, 2 * 9 * t.output[0] * t.output[1]);
  ConvShape odd = t;
  odd.alignment = 6;
  CudnnConv conv;
  std::string error;
  cudnnHandle_t not_a_handle = reinterpret_cast<cudnnHandle_t>(&odd);  // never used: refused first
  EXPECT_EQ(conv.init(not_a_handle, odd, ConvMath::strict_fp32, 0, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("alignment"), std::string::npos) << error;
}

TEST(ConvShapeCheck, RefusesShapesThatDoNotFollow) {
  ConvShape s = shape_of(2, 1, 4, 8, 1, {8, 8}, {3, 3}, 1, {1, 1}, {1, 1}, 1);
  EXPECT_EQ(detail::conv_shape_problem(s), "");
  ConvShape wrong_out = s;
  wrong_out.output[0] = 9;
  EXPECT_NE(detail::conv_shape_problem(wrong_out), "");
  ConvShape bad_groups = s;
  bad_groups.groups = 3;
  EXPECT_NE(detail::conv_shape_problem(bad_groups).find("divisible"), std::string::npos);
  ConvShape overlapping = s;  // y's images closer than one image
  overlapping.y_image = 8 * 8 * 8 - 1;
  EXPECT_NE(detail::conv_shape_problem(overlapping).find("one image apart"), std::string::npos);
  overlapping.y_image = 8 * 8 * 8;
  EXPECT_EQ(detail::conv_shape_problem(overlapping), "");
  ConvShape transposed = shape_of(2, 1, 4, 8, 1, {5, 5}, {3, 3}, 2, {1, 1}, {1, 1}, 1, true, 1);
  EXPECT_EQ(detail::conv_shape_problem(transposed), "");
  // Channels-last: forward only, y dense.
  ConvShape last = s;
  last.x_channels_last = last.y_channels_last = true;
  EXPECT_EQ(detail::conv_shape_problem(last), "");
  last.y_image = 8 * 8 * 16;
  EXPECT_NE(detail::conv_shape_problem(last).find("channels-last y is dense"), std::string::npos);
  ConvShape transposed_last = transposed;
  transposed_last.x_channels_last = true;
  EXPECT_NE(detail::conv_shape_problem(transposed_last).find("NCDHW"), std::string::npos);
  EXPECT_EQ(transposed.output[0], 10);  // (5-1)*2 - 2 + 2 + 1 + 1
  CudnnConv conv;
  std::string error;
  EXPECT_EQ(conv.init(nullptr, s, ConvMath::strict_fp32, 0, error), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("null cuDNN handle"), std::string::npos);
}

// Channels-last strides of cuDNN's dims: C fastest, then the spatial dims last to first.
TEST(ConvShapeCheck, ChannelsLastStrides) {
  const int64_t nchw[4] = {2, 3, 4, 5}, ncdhw[5] = {2, 3, 4, 5, 6}, nc1l[4] = {2, 3, 1, 7};
  int64_t strides[5];
  detail::channels_last_strides(nchw, 4, strides);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + 4), (std::vector<int64_t>{60, 1, 15, 3}));
  detail::channels_last_strides(ncdhw, 5, strides);
  EXPECT_EQ(std::vector<int64_t>(strides, strides + 5),
            (std::vector<int64_t>{360, 1, 90, 18, 3}));
  detail::channels_last_strides(nc1l, 4, strides);  // 1-d (NLC) as cuDNN's unit height
  EXPECT_EQ(std::vector<int64_t>(strides, strides + 4), (std::vector<int64_t>{21, 1, 21, 3}));
}

TEST(ConvShapeCheck, OneDimensionalBecomesTwoWithAUnitHeight) {
  const detail::ConvDims d =
      detail::conv_dims(shape_of(1, 3, 6, 10, 2, {40}, {5}, 2, {2}, {1}, 1));
  EXPECT_EQ(d.rank, 4);
  EXPECT_EQ(d.x[2], 1);
  EXPECT_EQ(d.x[3], 40);
  EXPECT_EQ(d.w[1], 3);  // in_channels / groups
  EXPECT_EQ(d.stride[0], 1);
  EXPECT_EQ(d.stride[1], 2);
  EXPECT_EQ(d.pad_after[1], 1);
}

}  // namespace
}  // namespace stitch::kernels
