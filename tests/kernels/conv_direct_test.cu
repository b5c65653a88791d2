// kernels/conv_direct.cuh (ConvDirect) on the GPU, over the shapes of conv_igemm_cases.cuh within
// its K and conv_direct_cases.cuh's few-channel ones: the same bits as the CPU's fmaf sum in k
// order (conv_direct_cases.cuh; GELU's tanh to a few ulps, the device's tanhf being its own), every
// output written (y starts NaN), a second run bit-identical; through an output map, only the
// mapped elements written; a later, smaller ConvDirect leaves the larger one's shared memory; and
// ConvTransposeDirect (kernels/conv_transpose.cuh: its phases on the direct kernel) against its
// CPU emulation; ConvDirectTf32 and ConvTransposeDirectTf32 (one TF32 product on the tensor
// cores) against the double reference to TF32's precision, with K padded to 8 never multiplying
// an infinite input; a channel reduction (sum, max, min) in both arithmetics, FP32's bits and
// TF32's bound. Plus init's refusals and run before init, which need no GPU.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "conv_direct_cases.cuh"
#include "conv_transpose_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_direct.cuh"

namespace stitch::kernels {
namespace {

using testing::ConvIgemmCase;
using testing::DeviceBuffer;

// The device's output `y` against the CPU's `expected` bits (GELU: to a few ulps, the device's
// tanhf being its own), and a second run's `again` bit-identical to it.
void expect_emulated_bits(const std::string& what, MatmulEpilogue epilogue,
                          const std::vector<float>& y, const std::vector<float>& expected,
                          const std::vector<float>& again) {
  if (epilogue == MatmulEpilogue::bias_gelu || epilogue == MatmulEpilogue::gelu) {
    const std::vector<double> want(expected.begin(), expected.end());
    EXPECT_TRUE(testing::all_close(y, want, testing::Tolerance{1e-6, 1e-6, 0})) << what;
  } else {
    EXPECT_TRUE(testing::bitwise_equal(y, expected)) << what;
  }
  EXPECT_TRUE(testing::bitwise_equal(y, again)) << what;
}

// One TF32 product per term (ConvDirectTf32): `y` within TF32's rounding of each output's terms
// (both operands rounded to 11 bits: 2^-10 of the sum of |terms|, GELU's slope on top), its error
// norm within TF32's range and above what FP32 FMAs reach (so the run made TF32 products), and a
// second run's `again` bit-identical.
void expect_tf32_accurate(const std::string& what, MatmulEpilogue epilogue,
                          const std::vector<float>& y, const std::vector<double>& expected,
                          const std::vector<double>& scale, const std::vector<float>& again) {
  const bool gelu = epilogue == MatmulEpilogue::bias_gelu || epilogue == MatmulEpilogue::gelu;
  EXPECT_TRUE(
      testing::all_close(y, expected, testing::Tolerance{1e-6, 0, gelu ? 3e-3 : 1.5e-3}, &scale))
      << what;
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    diff += (y[i] - expected[i]) * (y[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  const double error_norm = std::sqrt(diff / std::max(norm, 1e-300));
  std::printf("[ conv_direct_tf32 ] %s: relative error norm %.3g\n", what.c_str(), error_norm);
  EXPECT_LE(error_norm, 2e-3) << what;
  EXPECT_GT(error_norm, 1e-6) << what << ": as accurate as FP32 FMAs";
  EXPECT_TRUE(testing::bitwise_equal(y, again)) << what;
}

class ConvDirectTest : public ::testing::TestWithParam<ConvIgemmCase> {};

TEST_P(ConvDirectTest, GivesTheKOrderSum) {
  REQUIRE_GPU();
  const ConvIgemmCase& c = GetParam();
  const ConvIgemmShape& s = c.shape;
  if (!ConvDirect::shape_problem(s).empty()) GTEST_SKIP() << c.name << ": K past the kernel's";
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 61, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 62, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 63, -1.f, 1.f);
  const std::vector<float> expected = testing::k_order_reference(s, c.epilogue, x, w, bias);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), db(bias.size()), dy(expected.size()),
      again(expected.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));  // NaN: every output written
  ConvDirect conv;
  std::string error;
  ASSERT_EQ(conv.init(s, c.epilogue, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(dx.data(), dw.data(), db.data(), dy.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_EQ(conv.run(dx.data(), dw.data(), db.data(), again.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  expect_emulated_bits(c.name + " on " + conv.describe(), c.epilogue, dy.download(), expected,
                       again.download());
  std::printf("[ conv_direct ] %s: %s\n", c.name.c_str(), conv.describe().c_str());
}

std::vector<ConvIgemmCase> all_cases() {
  std::vector<ConvIgemmCase> cases = testing::conv_igemm_cases();
  for (ConvIgemmCase& c : testing::few_channel_cases())
    cases.push_back(std::move(c));
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvDirectTest, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name; });

// ConvDirectTf32 (the tf32 track's direct kernel, on the tensor cores) against the double
// reference (expect_tf32_accurate), every output written (y starts NaN).
class ConvDirectTf32Test : public ::testing::TestWithParam<ConvIgemmCase> {};

TEST_P(ConvDirectTf32Test, MatchesTheDoubleReferenceToTf32Precision) {
  REQUIRE_GPU();
  const ConvIgemmCase& c = GetParam();
  const ConvIgemmShape& s = c.shape;
  detail::DirectConvParams tiling;
  const std::string problem =
      detail::plan_direct_conv(s, 132, tiling, detail::DirectConvMath::tf32);
  if (!problem.empty()) GTEST_SKIP() << c.name << ": " << problem;  // FP32 FMAs, if any: below
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 61, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 62, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 63, -1.f, 1.f);
  std::vector<double> scale;
  const std::vector<double> expected = testing::double_reference(s, c.epilogue, x, w, bias, &scale);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), db(bias.size()), dy(expected.size()),
      again(expected.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));  // NaN: every output written
  ConvDirectTf32 conv;
  std::string error;
  ASSERT_EQ(conv.init(s, c.epilogue, error), STITCH_OK) << error;
  EXPECT_NE(conv.describe().find("direct tf32"), std::string::npos) << conv.describe();
  ASSERT_EQ(conv.run(dx.data(), dw.data(), db.data(), dy.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_EQ(conv.run(dx.data(), dw.data(), db.data(), again.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  expect_tf32_accurate(c.name + " on " + conv.describe(), c.epilogue, dy.download(), expected,
                       scale, again.download());
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvDirectTf32Test, ::testing::ValuesIn(all_cases()),
                         [](const auto& info) { return info.param.name; });

// K padded to the tensor cores' 8 (27 products: 3 channels x 3 x 3) takes zeros, never 0 · inf:
// an infinite input gives infinities (or NaN, where its window's terms cancel) only in the
// outputs whose windows hold it, the rest finite.
TEST(ConvDirectTf32Test, PaddedKNeverMultipliesAnInfiniteInput) {
  REQUIRE_GPU();
  const ConvIgemmShape s = testing::conv_case_shape(1, 3, 16, 1, {12, 40}, {3});
  auto x = testing::uniform_floats(testing::conv_input_elements(s), 81, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 82, 0.5f, 1.f);
  const int64_t row = 5, col = 17;  // channel 0
  x[row * s.input[1] + col] = INFINITY;
  DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(testing::conv_output_elements(s));
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ConvDirectTf32 conv;
  std::string error;
  ASSERT_EQ(conv.init(s, MatmulEpilogue::none, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(dx.data(), dw.data(), nullptr, dy.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> y = dy.download();
  const int64_t oh = s.output[0], ow = s.output[1];
  for (int64_t c = 0; c < s.out_channels; ++c)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const bool holds = i <= row && row < i + 3 && j <= col && col < j + 3;
        const float v = y[(c * oh + i) * ow + j];
        EXPECT_EQ(std::isinf(v) && v > 0, holds)
            << "channel " << c << " at " << i << ", " << j << ": " << v;
      }
}

// Where the tensor cores' tiling (16-channel slices: taller patches) exceeds the shared memory,
// ConvDirectTf32 runs the FP32 FMAs: a pointwise 96 -> 16 convolution (as SqueezeNet's squeeze)
// gives ConvDirect's bits.
TEST(ConvDirectTf32Test, RunsFp32FmasWhereItsTilingDoesNotFit) {
  REQUIRE_GPU();
  const ConvIgemmShape s = testing::conv_case_shape(2, 96, 16, 1, {20, 126}, {1});
  detail::DirectConvParams tiling;
  ASSERT_NE(detail::plan_direct_conv(s, 132, tiling, detail::DirectConvMath::tf32), "");
  ASSERT_EQ(ConvDirectTf32::shape_problem(s), "");
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 84, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 85, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 86, -1.f, 1.f);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), db(bias.size()),
      dy(testing::conv_output_elements(s));
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ConvDirectTf32 conv;
  std::string error;
  ASSERT_EQ(conv.init(s, MatmulEpilogue::bias_relu, error), STITCH_OK) << error;
  EXPECT_NE(conv.describe().find("direct fp32"), std::string::npos) << conv.describe();
  ASSERT_EQ(conv.run(dx.data(), dw.data(), db.data(), dy.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(testing::bitwise_equal(
      dy.download(), testing::k_order_reference(s, MatmulEpilogue::bias_relu, x, w, bias)));
}

// A channel reduction's device runs (set_channel_reduction): ConvDirect's give the CPU's bits of
// the FP32 sums transformed, reduced in the kernel's order and finished (conv_direct_cases.cuh);
// ConvDirectTf32's are within TF32's rounding of the double reference reduced (for a sum, the
// sum of its terms' bounds; for max and min, the largest), y one value per position written
// (it starts NaN), a second run bit-identical.
template <class Conv, detail::ChannelReduceOp kOp>
void expect_reduced_channels(const ConvIgemmCase& c, const char* op) {
  using Reduction = detail::ChannelReduction<kOp, testing::ImageHalf>;
  const ConvIgemmShape& s = c.shape;
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 74, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 75, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 76, -1.f, 1.f);
  const size_t positions = testing::conv_output_elements(s) / s.out_channels;
  DeviceBuffer<float> dx(x.size()), dw(w.size()), db(bias.size()), dy(positions),
      again(positions);
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));
  Conv conv;
  conv.set_channel_reduction();
  std::string error;
  ASSERT_EQ((conv.template init<testing::PlaneSkew, Reduction>(s, c.epilogue, error)), STITCH_OK)
      << error;
  for (DeviceBuffer<float>* y : {&dy, &again})
    ASSERT_EQ(conv.run(dx.data(), dw.data(), db.data(), y->data(), nullptr, error,
                       detail::PlaneIdentity{}, testing::PlaneSkew{}, Reduction{}),
              STITCH_OK)
        << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::string what = c.name + " " + op + " on " + conv.describe();
  EXPECT_NE(what.find("channels reduced"), std::string::npos) << what;
  const std::vector<float> y = dy.download();
  EXPECT_TRUE(testing::bitwise_equal(y, again.download())) << what;
  const int64_t plane_size = static_cast<int64_t>(positions) / s.batch;
  if constexpr (std::is_same_v<Conv, ConvDirect>) {
    std::vector<float> values = testing::k_order_reference(s, c.epilogue, x, w, bias);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = testing::PlaneSkew{}(static_cast<int64_t>(i) / plane_size, values[i]);
    EXPECT_TRUE(testing::bitwise_equal(
        y, testing::reduce_channels_in_slices(values, s.batch, s.out_channels, Reduction{})))
        << what;
  } else {
    std::vector<double> scale;
    const std::vector<double> values =
        testing::double_reference(s, c.epilogue, x, w, bias, &scale);
    std::vector<double> expected(positions), bound(positions);
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t i = 0; i < plane_size; ++i) {
        double r = 0.0, b = 0.0;
        for (int64_t ch = 0; ch < s.out_channels; ++ch) {
          const int64_t at = (n * s.out_channels + ch) * plane_size + i;
          const double v = values[at] - 0.125 * ((n * s.out_channels + ch) % 5);
          r = ch == 0 ? v
              : kOp == detail::ChannelReduceOp::sum ? r + v
              : kOp == detail::ChannelReduceOp::max ? std::max(r, v)
                                                    : std::min(r, v);
          b = kOp == detail::ChannelReduceOp::sum ? b + scale[at] : std::max(b, scale[at]);
        }
        expected[n * plane_size + i] = 0.5 * r + static_cast<double>(n);
        bound[n * plane_size + i] = 0.5 * b;
      }
    EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance{1e-6, 0, 1.5e-3}, &bound))
        << what;
  }
}

template <class Conv>
void expect_every_channel_reduction(const ConvIgemmCase& c) {
  expect_reduced_channels<Conv, detail::ChannelReduceOp::sum>(c, "sum");
  expect_reduced_channels<Conv, detail::ChannelReduceOp::max>(c, "max");
  expect_reduced_channels<Conv, detail::ChannelReduceOp::min>(c, "min");
}

class ConvDirectChannelReductionTest : public ::testing::TestWithParam<ConvIgemmCase> {};

TEST_P(ConvDirectChannelReductionTest, Fp32GivesTheEmulatedBits) {
  REQUIRE_GPU();
  expect_every_channel_reduction<ConvDirect>(GetParam());
}

TEST_P(ConvDirectChannelReductionTest, Tf32MatchesTheDoubleReferenceToTf32Precision) {
  REQUIRE_GPU();
  expect_every_channel_reduction<ConvDirectTf32>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvDirectChannelReductionTest,
                         ::testing::ValuesIn(testing::channel_reduction_cases()),
                         [](const auto& info) { return info.param.name; });

// init refuses a reduction type without set_channel_reduction, and the reduction with an output
// map; run, a reduction init did not plan (no GPU needed: both fail before the device is asked).
TEST(ConvDirectChannelReductionTest, InitAndRunRefuseAMismatchedReduction) {
  using Min = detail::ChannelReduction<detail::ChannelReduceOp::min>;
  const ConvIgemmShape s = testing::conv_case_shape(1, 8, 16, 1, {8, 40}, {3});
  std::string error;
  ConvDirect plain;
  EXPECT_NE((plain.init<detail::PlaneIdentity, Min>(s, MatmulEpilogue::none, error)), STITCH_OK);
  EXPECT_NE(error.find("without set_channel_reduction"), std::string::npos) << error;
  ConvDirect mapped;
  mapped.set_output_map(ConvIgemmOutputMap{});
  mapped.set_channel_reduction();
  EXPECT_NE((mapped.init<detail::PlaneIdentity, Min>(s, MatmulEpilogue::none, error)), STITCH_OK);
  EXPECT_NE(error.find("no output map"), std::string::npos) << error;
  ConvDirect reduced;
  reduced.set_channel_reduction();
  float* none = nullptr;
  EXPECT_NE(reduced.run(none, none, none, none, nullptr, error), STITCH_OK);
}

// A transposed case's operands and two runs of `Conv` (ConvTransposeDirect or its TF32 form) on
// them: prepared once, then given the weight per call; y starts NaN (every output written).
struct TransposedRuns {
  std::vector<float> x, w, bias, y, again;
  std::string described;
};

template <class Conv>
void run_transposed(const testing::ConvTransposeCase& c, TransposedRuns& runs) {
  const ConvTransposeShape d = detail::conv_transpose_3d(c.shape);
  runs.x = testing::uniform_floats(d.batch * d.in_channels * d.input[0] * d.input[1] * d.input[2],
                                   91, -1.f, 1.f);
  runs.w = testing::uniform_floats(
      d.in_channels * (d.out_channels / d.groups) * d.kernel[0] * d.kernel[1] * d.kernel[2], 92,
      -1.f, 1.f);
  runs.bias = testing::uniform_floats(d.out_channels, 93, -1.f, 1.f);
  const size_t outputs = d.batch * d.out_channels * d.output[0] * d.output[1] * d.output[2];
  DeviceBuffer<float> dx(runs.x.size()), dw(runs.w.size()), db(runs.bias.size()), dy(outputs),
      again(outputs);
  ASSERT_CUDA(dx.upload(runs.x));
  ASSERT_CUDA(dw.upload(runs.w));
  ASSERT_CUDA(db.upload(runs.bias));
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));
  Conv conv;
  std::string error;
  ASSERT_EQ(conv.init(c.shape, c.epilogue, error), STITCH_OK) << error;
  ASSERT_EQ(conv.prepare_weights(dw.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(dx.data(), nullptr, db.data(), dy.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(dx.data(), dw.data(), db.data(), again.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  runs.y = dy.download();
  runs.again = again.download();
  runs.described = c.name + " on " + conv.describe();
}

// ConvTransposeDirect: its phases on the direct kernel give the CPU emulation's bits
// (conv_direct_cases.cuh; GELU to a few ulps).
class ConvTransposeDirectTest : public ::testing::TestWithParam<testing::ConvTransposeCase> {};

TEST_P(ConvTransposeDirectTest, GivesTheEmulatedBits) {
  REQUIRE_GPU();
  const testing::ConvTransposeCase& c = GetParam();
  TransposedRuns runs;
  ASSERT_NO_FATAL_FAILURE(run_transposed<ConvTransposeDirect>(c, runs));
  const std::vector<float> expected =
      testing::emulate_conv_transpose_direct(c.shape, c.epilogue, runs.x, runs.w, runs.bias);
  ASSERT_FALSE(expected.empty()) << c.name << ": a phase the direct kernel refused";
  expect_emulated_bits(runs.described, c.epilogue, runs.y, expected, runs.again);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvTransposeDirectTest,
                         ::testing::ValuesIn(testing::conv_transpose_cases()),
                         [](const auto& info) { return info.param.name; });

// ConvTransposeDirectTf32: its phases on the direct kernel's tensor-core form against the
// definition in double (conv_transpose_cases.cuh) by expect_tf32_accurate.
class ConvTransposeDirectTf32Test : public ::testing::TestWithParam<testing::ConvTransposeCase> {};

TEST_P(ConvTransposeDirectTf32Test, MatchesTheDoubleReferenceToTf32Precision) {
  REQUIRE_GPU();
  const testing::ConvTransposeCase& c = GetParam();
  TransposedRuns runs;
  ASSERT_NO_FATAL_FAILURE(run_transposed<ConvTransposeDirectTf32>(c, runs));
  std::vector<double> scale;
  const std::vector<double> expected =
      testing::conv_transpose_double_reference(c, runs.x, runs.w, runs.bias, &scale);
  expect_tf32_accurate(runs.described, c.epilogue, runs.y, expected, scale, runs.again);
}

INSTANTIATE_TEST_SUITE_P(Cases, ConvTransposeDirectTf32Test,
                         ::testing::ValuesIn(testing::conv_transpose_cases()),
                         [](const auto& info) { return info.param.name; });

// A phase-like output map on the device: every other column of every other row of a y twice as
// large, its other elements untouched.
TEST(ConvDirectTest, WritesOnlyThroughTheOutputMap) {
  REQUIRE_GPU();
  const ConvIgemmShape s = testing::conv_case_shape(2, 3, 10, 1, {6, 9}, {3}, {1}, {1});
  const int64_t oh = s.output[0], ow = s.output[1];
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 71, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 72, -1.f, 1.f);
  const std::vector<float> dense =
      testing::k_order_reference(s, MatmulEpilogue::none, x, w, std::vector<float>());
  ConvIgemmOutputMap map;
  map.channel_floats = 4 * oh * ow, map.image_floats = s.out_channels * map.channel_floats;
  map.origin = 1, map.step[1] = 4 * ow, map.step[2] = 2;
  std::vector<float> wide(s.batch * map.image_floats, -7.0f);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(wide.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(dy.upload(wide));
  ConvDirect conv;
  conv.set_output_map(map);
  std::string error;
  ASSERT_EQ(conv.init(s, MatmulEpilogue::none, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(dx.data(), dw.data(), nullptr, dy.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t c = 0; c < s.out_channels; ++c)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j)
          wide[n * map.image_floats + c * map.channel_floats + 1 + i * map.step[1] + j * 2] =
              dense[((n * s.out_channels + c) * oh + i) * ow + j];
  EXPECT_TRUE(testing::bitwise_equal(dy.download(), wide));
}

// The shared-memory opt-in is per kernel and process-wide: a ConvDirect initialised after another
// that needs more than 48 KiB must not shrink it.
TEST(ConvDirectTest, ALaterSmallerInitKeepsTheLargerSharedMemory) {
  REQUIRE_GPU();
  const ConvIgemmShape large = testing::conv_case_shape(1, 16, 64, 1, {4, 6, 40}, {3});
  const ConvIgemmShape small = testing::conv_case_shape(1, 3, 8, 1, {8, 8}, {3});
  ConvDirect big, little;
  std::string error;
  ASSERT_EQ(big.init(large, MatmulEpilogue::none, error), STITCH_OK) << error;
  ASSERT_GT(big.params().shared_bytes(), 48 * 1024) << big.describe();
  ASSERT_EQ(little.init(small, MatmulEpilogue::none, error), STITCH_OK) << error;
  const auto x = testing::uniform_floats(testing::conv_input_elements(large), 81, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(large), 82, -1.f, 1.f);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), dy(testing::conv_output_elements(large));
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_EQ(big.run(dx.data(), dw.data(), nullptr, dy.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(testing::bitwise_equal(
      dy.download(), testing::k_order_reference(large, MatmulEpilogue::none, x, w, {})));
}

TEST(ConvDirectTest, BadShapesAndCallsAreRefused) {
  ConvDirect conv;
  std::string error;
  float dummy = 0.0f;
  EXPECT_EQ(conv.run(&dummy, &dummy, nullptr, &dummy, nullptr, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("before a successful init"), std::string::npos) << error;
  EXPECT_NE(ConvDirect::shape_problem(testing::conv_case_shape(1, 256, 8, 1, {8, 8}, {3}))
                .find("products per output"),
            std::string::npos);
  EXPECT_EQ(ConvDirect::shape_problem(testing::conv_case_shape(128, 8, 64, 1, {128, 128}, {3})),
            "");
}

}  // namespace
}  // namespace stitch::kernels
