// kernels/conv_engine_timing.cuh on the GPU: cuDNN plus the kernel epilogue's pass
// (run_cudnn_with_epilogue) gives what each of the project's convolution kernels gives with the
// epilogue fused (ConvIgemmTf32x3, ConvDirect and both transposed forms, bias + ReLU / GELU),
// within FP32 rounding over the sum of |terms|, and cuDNN on the implicit GEMM's transformed copy
// of x what the kernel gives with the transform fused; time_kernel_against_cudnn runs both sides on
// its scratch and reports a choice; the pass itself against the CPU. Label gpu; skips without a
// device.
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/conv_direct.cuh"
#include "kernels/conv_engine_timing.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"
#include "kernels/conv_transpose.cuh"

namespace stitch::kernels {
namespace {

using testing::all_close;
using testing::DeviceBuffer;
using testing::Tolerance;

constexpr size_t kWorkspace = 64 << 20;

// A 2-d convolution: 3x3, padding 1, stride 1 forward or 2 transposed (output 2·in - 1).
struct Case {
  int64_t batch, in_channels, out_channels, size;
  bool transposed;
};

ConvShape cudnn_shape(const Case& c) {
  ConvShape s;
  s.spatial = 2;
  s.batch = c.batch, s.in_channels = c.in_channels, s.out_channels = c.out_channels;
  s.transposed = c.transposed;
  s.alignment = 16;
  for (int i = 0; i < 2; ++i) {
    s.input[i] = c.size, s.kernel[i] = 3, s.pad_before[i] = s.pad_after[i] = 1;
    s.stride[i] = c.transposed ? 2 : 1;
    s.output[i] = c.transposed ? 2 * c.size - 1 : c.size;
  }
  return s;
}

template <class Shape>
Shape kernel_shape(const ConvShape& s) {
  Shape k;
  k.spatial = s.spatial;
  k.batch = s.batch, k.in_channels = s.in_channels, k.out_channels = s.out_channels;
  for (int i = 0; i < s.spatial; ++i) {
    k.input[i] = s.input[i], k.output[i] = s.output[i], k.kernel[i] = s.kernel[i];
    k.stride[i] = s.stride[i];
    if constexpr (std::is_same_v<Shape, ConvTransposeShape>)
      k.pad[i] = s.pad_before[i];
    else
      k.pad_before[i] = s.pad_before[i], k.pad_after[i] = s.pad_after[i];
  }
  return k;
}

// The kernel's output against cuDNN + the pass on the same operands, then the timing.
// kPrepare: the kernel's weight prepared at init (run with w = nullptr), as programs do for every
// kernel class but the forward ConvDirect, which reads w as it is. kTransform (ConvIgemmTf32x3
// only): the kernel applies an input transform as it copies x, cuDNN reads the kernel's
// transformed_input, and the timing counts that pass on cuDNN's side.
template <class Kernel, class Shape, bool kPrepare, bool kTransform = false>
void expect_sides_agree(const Case& c, MatmulEpilogue epilogue) {
  constexpr bool prepare = kPrepare;
  const ConvShape s = cudnn_shape(c);
  int64_t xn = 0, wn = 0, yn = 0;
  conv_elements(s, xn, wn, yn);
  const auto x = testing::uniform_floats(xn, 41, -1.f, 1.f);
  const auto w = testing::uniform_floats(wn, 42, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 43, -1.f, 1.f);
  const auto scale = testing::uniform_floats(s.batch * s.in_channels, 44, -2.f, 2.f);
  const auto shift = testing::uniform_floats(s.batch * s.in_channels, 45, -0.5f, 1.f);
  DeviceBuffer<float> dx(xn), dw(wn), db(bias.size()), dy_kernel(yn), dy_cudnn(yn);
  DeviceBuffer<float> dscale(scale.size()), dshift(shift.size());
  DeviceBuffer<char> workspace(kWorkspace);
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(dscale.upload(scale));
  ASSERT_CUDA(dshift.upload(shift));
  const testing::AffineRelu transform{dscale.data(), dshift.data()};
  std::string error;
  CudnnHandle handle;
  ASSERT_EQ(handle.create(error), STITCH_OK) << error;
  CudnnConv cudnn;
  ASSERT_EQ(cudnn.init(handle.get(), s, ConvMath::strict_fp32, kWorkspace, error), STITCH_OK)
      << error;
  ASSERT_EQ(tune_conv_on_scratch(cudnn, s, workspace.data(), nullptr, error), STITCH_OK) << error;
  Kernel kernel;
  if constexpr (kTransform) kernel.set_input_transform(true);
  ASSERT_EQ(kernel.init(kernel_shape<Shape>(s), epilogue, error), STITCH_OK) << error;
  if constexpr (kPrepare)
    ASSERT_EQ(kernel.prepare_weights(dw.data(), nullptr, error), STITCH_OK) << error;
  const float* cudnn_x = dx.data();
  if constexpr (kTransform) {
    ASSERT_EQ(kernel.run(dx.data(), prepare ? nullptr : dw.data(), db.data(), dy_kernel.data(),
                         nullptr, error, transform),
              STITCH_OK)
        << error;
    ASSERT_EQ(kernel.transformed_input(dx.data(), nullptr, transform, cudnn_x, error), STITCH_OK)
        << error;
  } else {
    ASSERT_EQ(kernel.run(dx.data(), prepare ? nullptr : dw.data(), db.data(), dy_kernel.data(),
                         nullptr, error),
              STITCH_OK)
        << error;
  }
  ASSERT_EQ(run_cudnn_with_epilogue(cudnn, s, epilogue, cudnn_x, dw.data(), db.data(),
                                    dy_cudnn.data(), workspace.data(), nullptr, error),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> by_cudnn = dy_cudnn.download();
  const std::vector<double> expected(by_cudnn.begin(), by_cudnn.end());
  // Both FP32-accurate: a few FP32 roundings of sums of at most 9 · in_channels terms of |x·w|
  // <= 1 (<= 3 transformed).
  const double bound = (kTransform ? 3e-5 : 1e-5) * 9 * static_cast<double>(c.in_channels);
  EXPECT_TRUE(all_close(dy_kernel.download(), expected, Tolerance{bound, 1e-5, 0}))
      << kernel.describe();
  bool cudnn_faster = false;
  ASSERT_EQ(time_kernel_against_cudnn(kernel, prepare, cudnn, s, epilogue, {kTransform, false},
                                      workspace.data(), nullptr, error, cudnn_faster),
            STITCH_OK)
      << error;
  std::printf("[ timing ] %s: %s\n", kernel.describe().c_str(),
              cudnn_faster ? "cuDNN faster" : "the kernel faster");
}

TEST(ConvEngineTiming, ImplicitGemmAgreesWithCudnnAndThePass) {
  REQUIRE_GPU();
  expect_sides_agree<ConvIgemmTf32x3, ConvIgemmShape, true>({4, 16, 32, 20, false},
                                                            MatmulEpilogue::bias_relu);
  expect_sides_agree<ConvIgemmTf32x3, ConvIgemmShape, true>({2, 8, 24, 9, false},
                                                            MatmulEpilogue::none);
}

// A BatchNorm's normalisation and ReLU fused into the implicit GEMM's copy of x: cuDNN, reading
// the kernel's transformed copy, agrees (the timed pair of a convolution with a prologue).
TEST(ConvEngineTiming, ImplicitGemmWithAnInputTransformAgreesWithCudnnOnItsCopy) {
  REQUIRE_GPU();
  expect_sides_agree<ConvIgemmTf32x3, ConvIgemmShape, true, true>({4, 16, 32, 20, false},
                                                                  MatmulEpilogue::bias_relu);
  expect_sides_agree<ConvIgemmTf32x3, ConvIgemmShape, true, true>({2, 6, 24, 9, false},
                                                                  MatmulEpilogue::none);
}

// A kernel reading x as a window of a larger buffer (a cat's piece, through its transform's copy)
// is timed on scratch as large as that window's span (KernelInputFloats): the timing runs.
TEST(ConvEngineTiming, TimesAKernelReadingAWindowOfX) {
  REQUIRE_GPU();
  const ConvShape s = cudnn_shape({4, 16, 32, 20, false});
  int64_t xn = 0, wn = 0, yn = 0;
  conv_elements(s, xn, wn, yn);
  std::string error;
  CudnnHandle handle;
  ASSERT_EQ(handle.create(error), STITCH_OK) << error;
  DeviceBuffer<char> workspace(kWorkspace);
  CudnnConv cudnn;
  ASSERT_EQ(cudnn.init(handle.get(), s, ConvMath::strict_fp32, kWorkspace, error), STITCH_OK)
      << error;
  ConvIgemmTf32x3 kernel;
  kernel.set_input_transform(true);
  kernel.set_input_image_floats(3 * xn / s.batch);  // x: a third of each image of a wider buffer
  ASSERT_EQ(kernel.init(kernel_shape<ConvIgemmShape>(s), MatmulEpilogue::none, error), STITCH_OK)
      << error;
  EXPECT_EQ(kernel.input_floats(), (s.batch - 1) * 3 * xn / s.batch + xn / s.batch);
  EXPECT_EQ(KernelInputFloats<ConvIgemmTf32x3>::of(kernel, xn), kernel.input_floats());
  EXPECT_EQ(KernelInputFloats<ConvDirect>::of(ConvDirect{}, xn), xn);
  bool cudnn_faster = false;
  ASSERT_EQ(time_kernel_against_cudnn(kernel, false, cudnn, s, MatmulEpilogue::none, {true, false},
                                      workspace.data(), nullptr, error, cudnn_faster),
            STITCH_OK)
      << error;
}

TEST(ConvEngineTiming, DirectKernelAgreesWithCudnnAndThePass) {
  REQUIRE_GPU();
  expect_sides_agree<ConvDirect, ConvIgemmShape, false>({4, 8, 64, 20, false},
                                                        MatmulEpilogue::bias_gelu);
}

TEST(ConvEngineTiming, TransposedKernelsAgreeWithCudnnAndThePass) {
  REQUIRE_GPU();
  expect_sides_agree<ConvTransposeIgemmTf32x3, ConvTransposeShape, true>({2, 16, 32, 12, true},
                                                                         MatmulEpilogue::bias_relu);
  expect_sides_agree<ConvTransposeDirect, ConvTransposeShape, true>({2, 4, 8, 12, true},
                                                                    MatmulEpilogue::bias);
}

// The pass alone: y = act(y + bias[c]) over [batch][channels][plane], or [batch][plane][channels]
// channels-last; none leaves y alone.
TEST(ConvEngineTiming, BiasActivationPassMatchesTheCpu) {
  REQUIRE_GPU();
  const int64_t batch = 3, channels = 5, plane = 37;
  const auto y = testing::uniform_floats(batch * channels * plane, 51, -2.f, 2.f);
  const auto bias = testing::uniform_floats(channels, 52, -1.f, 1.f);
  DeviceBuffer<float> dy(y.size()), db(bias.size());
  ASSERT_CUDA(db.upload(bias));
  for (bool channels_last : {false, true}) {
    for (MatmulEpilogue e : {MatmulEpilogue::none, MatmulEpilogue::relu, MatmulEpilogue::bias,
                             MatmulEpilogue::bias_relu, MatmulEpilogue::bias_gelu}) {
      ASSERT_CUDA(dy.upload(y));
      ASSERT_CUDA(launch_conv_bias_activation(dy.data(), db.data(), e, batch, channels, plane,
                                              0, channels_last, nullptr));
      ASSERT_CUDA(cudaDeviceSynchronize());
      std::vector<double> expected(y.size());
      for (size_t i = 0; i < y.size(); ++i) {
        float v = y[i];
        const int64_t channel = channels_last ? i % channels : i / plane % channels;
        if (epilogue_has_bias(e)) v += bias[channel];
        expected[i] = detail::gemm_activation(v, e);
      }
      EXPECT_TRUE(all_close(dy.download(), expected, Tolerance{1e-6, 1e-6, 0}))
          << static_cast<int>(e) << (channels_last ? " channels-last" : " NCDHW");
    }
  }
}

// Over a window of whole channels of a cat's buffer (images y_image floats apart, NCDHW): the
// window's channels change, the cat's others (before and after it) stay as they were; a
// channels-last y with a stride, or images closer than one image, is refused.
TEST(ConvEngineTiming, BiasActivationPassKeepsToItsWindow) {
  REQUIRE_GPU();
  const int64_t batch = 3, channels = 5, plane = 37, before = 2, after = 4;
  const int64_t y_image = (before + channels + after) * plane;
  const auto cat = testing::uniform_floats(batch * y_image, 53, -2.f, 2.f);
  const auto bias = testing::uniform_floats(channels, 54, -1.f, 1.f);
  DeviceBuffer<float> dy(cat.size()), db(bias.size());
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(dy.upload(cat));
  float* window = dy.data() + before * plane;
  ASSERT_CUDA(launch_conv_bias_activation(window, db.data(), MatmulEpilogue::bias_relu, batch,
                                          channels, plane, y_image, false, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  std::vector<double> expected(cat.begin(), cat.end());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < plane; ++p) {
        const int64_t i = n * y_image + (before + c) * plane + p;
        expected[i] = std::max(0.0f, cat[i] + bias[c]);
      }
  EXPECT_TRUE(all_close(dy.download(), expected, Tolerance{1e-6, 1e-6, 0}));
  EXPECT_EQ(launch_conv_bias_activation(window, db.data(), MatmulEpilogue::bias_relu, batch,
                                        channels, plane, y_image, true, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_conv_bias_activation(window, db.data(), MatmulEpilogue::bias_relu, batch,
                                        channels, plane, channels * plane - 1, false, nullptr),
            cudaErrorInvalidValue);
}

}  // namespace
}  // namespace stitch::kernels
