// The implicit-GEMM convolution's channel reduction (ConvIgemm::set_channel_reduction: a sum, max
// or min over the output channels at each position, applied by the kernel as it stores, then
// finished per image): on the mma.sync kernel and the wgmma kernel (NCDHW and channels-last
// gathers; 3xTF32 and one TF32 product; the 64- and 128-wide tiles), with the output transform
// before it and the bias epilogues. Each run is held
// - within its products' rounding of the double reference transformed, reduced and finished (for
//   a sum, the sum of its terms' bounds; for max and min, the largest), every position written
//   (y starts NaN), a second run bit-identical;
// - for max and min, to the bits of the kernel's own full output (a run without the reduction)
//   transformed, reduced and finished on the CPU, where that run's sums are the same (its K not
//   split: the reduction never splits K);
// and a run without the reduction it was initialised for is refused. (What init and the launcher
// refuse before any device call: kernels_plans_test.) Label gpu; skips without a device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "conv_direct_cases.cuh"
#include "conv_igemm_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"

namespace stitch::kernels {
namespace {

using testing::ConvIgemmCase;
using testing::DeviceBuffer;
using testing::ImageHalf;
using testing::PlaneSkew;
using Op = detail::ChannelReduceOp;

enum class Engine { mma_sync, wgmma_ncdhw, wgmma, wgmma_tf32 };

std::string engine_name(Engine engine) {
  switch (engine) {
    case Engine::mma_sync:
      return "mma_sync";
    case Engine::wgmma_ncdhw:
      return "wgmma_ncdhw";
    case Engine::wgmma:
      return "wgmma";
    case Engine::wgmma_tf32:
      return "wgmma_tf32";
  }
  return "?";
}

// The direct kernel's reduction cases (up to 64 channels) and two of the 128-wide tile, one with
// enough output tiles that the full run does not split K either.
std::vector<ConvIgemmCase> reduction_cases() {
  std::vector<ConvIgemmCase> cases = testing::channel_reduction_cases();
  cases.push_back({"k3_128_out_pad1_bias_relu",
                   testing::conv_case_shape(2, 12, 128, 1, {10, 14}, {3}, {1}, {1}),
                   MatmulEpilogue::bias_relu});
  cases.push_back({"k3_128_out_many_tiles",
                   testing::conv_case_shape(2, 16, 128, 1, {96, 96}, {3}, {1}, {1})});
  cases.push_back({"k1x1_96_out_many_tiles", testing::conv_case_shape(4, 32, 96, 1, {64, 72}, {1}),
                   MatmulEpilogue::bias});
  return cases;
}

// What both product counts share: the engine and gather set up, and (Conv) the class.
template <class Conv>
void configure(Conv& conv, Engine engine) {
  conv.set_engine(engine == Engine::mma_sync ? Tf32x3Engine::mma_sync : Tf32x3Engine::wgmma);
  conv.allow_channels_last(engine == Engine::wgmma || engine == Engine::wgmma_tf32);
  conv.allow_box_tma(engine != Engine::wgmma_ncdhw);  // boxes where an NCDHW x allows them
}

// The inputs, the double reference (transformed by PlaneSkew) and its per-element bound (scale,
// declared first: the reference's constructor fills it).
struct ReductionData {
  std::vector<float> x, w, bias;
  std::vector<double> scale, values;
  DeviceBuffer<float> dx, dw, db;
  explicit ReductionData(const ConvIgemmCase& c)
      : x(testing::uniform_floats(testing::conv_input_elements(c.shape), 81, -1.f, 1.f)),
        w(testing::uniform_floats(testing::conv_weight_elements(c.shape), 82, -1.f, 1.f)),
        bias(testing::uniform_floats(c.shape.out_channels, 83, -1.f, 1.f)),
        values(testing::double_reference(c.shape, c.epilogue, x, w, bias, &scale)),
        dx(x.size()),
        dw(w.size()),
        db(bias.size()) {
    const int64_t plane_size = static_cast<int64_t>(values.size()) /
                               (c.shape.batch * c.shape.out_channels);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] -= 0.125 * (static_cast<int64_t>(i) / plane_size % 5);
  }
};

// The double reference's [batch, channels, positions] values reduced over the channels by kOp
// and finished as ImageHalf does: [batch, positions]; `bound` the reduced per-element bounds (a
// sum's add up, max's and min's take the largest).
template <Op kOp>
std::vector<double> reduce_reference(const ReductionData& data, int64_t batch, int64_t channels,
                                     std::vector<double>& bound) {
  const int64_t positions = static_cast<int64_t>(data.values.size()) / (batch * channels);
  std::vector<double> out(batch * positions);
  bound.assign(out.size(), 0.0);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t i = 0; i < positions; ++i) {
      double r = 0.0, b = 0.0;
      for (int64_t ch = 0; ch < channels; ++ch) {
        const int64_t at = (n * channels + ch) * positions + i;
        const double v = data.values[at];
        r = ch == 0 ? v : kOp == Op::sum ? r + v : kOp == Op::max ? std::max(r, v) : std::min(r, v);
        b = kOp == Op::sum ? b + data.scale[at] : std::max(b, data.scale[at]);
      }
      out[n * positions + i] = 0.5 * r + static_cast<double>(n);
      bound[n * positions + i] = 0.5 * b;
    }
  return out;
}

// A full output's floats reduced over the channels by the reduction's own combine, in channel
// order, and finished: [batch, positions].
template <class Reduction>
std::vector<float> reduce_floats(const std::vector<float>& values, int64_t batch,
                                 int64_t channels) {
  const int64_t positions = static_cast<int64_t>(values.size()) / (batch * channels);
  std::vector<float> out(batch * positions);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t i = 0; i < positions; ++i) {
      float r = Reduction::identity();
      for (int64_t ch = 0; ch < channels; ++ch)
        r = Reduction::combine(r, values[(n * channels + ch) * positions + i]);
      out[n * positions + i] = Reduction{}.finish(n, r);
    }
  return out;
}

// One reduction run of `Conv` (configured for `engine`) against the double reference and, for
// max and min where `full` (the same kernel's transformed full output) has unsplit sums, its bits.
template <class Conv, Op kOp>
void expect_reduced(const ConvIgemmCase& c, Engine engine, ReductionData& data,
                    const std::vector<float>* full, const char* op) {
  using Reduction = detail::ChannelReduction<kOp, ImageHalf>;
  const ConvIgemmShape& s = c.shape;
  const size_t positions = testing::conv_output_elements(s) / s.out_channels;
  DeviceBuffer<float> dy(positions), again(positions);
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));  // NaN
  Conv conv;
  configure(conv, engine);
  conv.set_channel_reduction();
  std::string error;
  ASSERT_EQ((conv.template init<PlaneSkew, Reduction>(s, c.epilogue, error)), STITCH_OK) << error;
  ASSERT_EQ(conv.prepare_weights(data.dw.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(data.dx.data(), nullptr, data.db.data(), dy.data(), nullptr, error,
                     detail::PlaneIdentity{}, PlaneSkew{}, Reduction{}),
            STITCH_OK)
      << error;
  ASSERT_EQ(conv.run(data.dx.data(), data.dw.data(), data.db.data(), again.data(), nullptr, error,
                     detail::PlaneIdentity{}, PlaneSkew{}, Reduction{}),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::string what = c.name + " " + op + " on " + conv.describe();
  EXPECT_NE(conv.run(data.dx.data(), nullptr, data.db.data(), dy.data(), nullptr, error),
            STITCH_OK)
      << what << ": run without the reduction init planned";
  EXPECT_NE(error.find("not the one init planned"), std::string::npos) << error;
  EXPECT_NE(what.find("channels reduced"), std::string::npos) << what;
  EXPECT_EQ(conv.splits(), 1) << what;
  EXPECT_EQ(conv.uses_wgmma(), engine != Engine::mma_sync) << what;
  const std::vector<float> y = dy.download();
  EXPECT_TRUE(testing::bitwise_equal(y, again.download())) << what;
  std::vector<double> bound;
  const std::vector<double> expected =
      reduce_reference<kOp>(data, s.batch, s.out_channels, bound);
  const bool one_product = engine == Engine::wgmma_tf32;
  const bool gelu = c.epilogue == MatmulEpilogue::bias_gelu;
  const double rtol = one_product ? (gelu ? 3e-3 : 1.5e-3) : 2e-5;
  EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance{1e-6, 0, rtol}, &bound)) << what;
  if (full != nullptr && kOp != Op::sum)
    EXPECT_TRUE(
        testing::bitwise_equal(y, reduce_floats<Reduction>(*full, s.batch, s.out_channels)))
        << what << ": not the full run's results reduced";
}

// The same kernel without the reduction (PlaneSkew applied as it stores): its output, or empty
// where its K is split (sums other than the reduction's).
template <class Conv>
std::vector<float> full_run(const ConvIgemmCase& c, Engine engine, ReductionData& data) {
  Conv conv;
  configure(conv, engine);
  std::string error;
  DeviceBuffer<float> dy(testing::conv_output_elements(c.shape));
  if (conv.template init<PlaneSkew>(c.shape, c.epilogue, error) != STITCH_OK ||
      conv.run(data.dx.data(), data.dw.data(), data.db.data(), dy.data(), nullptr, error,
               detail::PlaneIdentity{}, PlaneSkew{}) != STITCH_OK ||
      cudaDeviceSynchronize() != cudaSuccess) {
    ADD_FAILURE() << c.name << ": the full run: " << error;
    return {};
  }
  std::printf("[ channel_reduction ] %s on %s: full run's K %s\n", c.name.c_str(),
              engine_name(engine).c_str(),
              conv.splits() == 1 ? "unsplit (bits compared)" : "split");
  return conv.splits() == 1 ? dy.download() : std::vector<float>{};
}

template <class Conv>
void expect_every_reduction(const ConvIgemmCase& c, Engine engine) {
  ReductionData data(c);
  ASSERT_CUDA(data.dx.upload(data.x));
  ASSERT_CUDA(data.dw.upload(data.w));
  ASSERT_CUDA(data.db.upload(data.bias));
  const std::vector<float> full = full_run<Conv>(c, engine, data);
  const std::vector<float>* compared = full.empty() ? nullptr : &full;
  expect_reduced<Conv, Op::sum>(c, engine, data, compared, "sum");
  expect_reduced<Conv, Op::max>(c, engine, data, compared, "max");
  expect_reduced<Conv, Op::min>(c, engine, data, compared, "min");
}

class ConvIgemmChannelReductionTest
    : public ::testing::TestWithParam<std::tuple<ConvIgemmCase, Engine>> {};

TEST_P(ConvIgemmChannelReductionTest, IsTheTransformedResultReducedAndFinished) {
  REQUIRE_GPU();
  const auto& [c, engine] = GetParam();
  std::string probe_error;
  const int built = gemm_tf32x3_kernels_built(probe_error);
  ASSERT_TRUE(probe_error.empty()) << probe_error;
  if (!(built & (engine == Engine::mma_sync ? detail::kGemmBuiltMmaSync : detail::kGemmBuiltWgmma)))
    GTEST_SKIP() << engine_name(engine) << " is not in this build's code for this device";
  if (engine == Engine::wgmma_tf32)
    expect_every_reduction<ConvIgemmTf32>(c, engine);
  else
    expect_every_reduction<ConvIgemmTf32x3>(c, engine);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvIgemmChannelReductionTest,
    ::testing::Combine(::testing::ValuesIn(reduction_cases()),
                       ::testing::Values(Engine::mma_sync, Engine::wgmma_ncdhw, Engine::wgmma,
                                         Engine::wgmma_tf32)),
    [](const ::testing::TestParamInfo<std::tuple<ConvIgemmCase, Engine>>& info) {
      return std::get<0>(info.param).name + "_" + engine_name(std::get<1>(info.param));
    });

}  // namespace
}  // namespace stitch::kernels
