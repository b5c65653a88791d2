// kernels/conv_igemm_tf32x3.cuh (ConvIgemmTf32x3 on each of its kernels, mma.sync and wgmma, the
// latter with either gather and with each tile width, 64 and 128) and the transposed convolution
// built on it (kernels/conv_transpose.cuh) on a GPU against a double-precision CPU
// convolution, over the shape tables of conv_igemm_cases.cuh (1x1, 3x3 with stride 1 and 2, 5x5
// pad 2, the ResNet stem, dilation, asymmetric and negative padding, odd channel counts, a 1x1
// output, batch 8, 1-d, 3-d, groups, long K, bias + ReLU / GELU epilogues) and
// conv_transpose_cases.cuh; and channels-last x and y against the NCDHW run. Per element: the
// GEMM tests' 3xTF32 bound (1e-6 + 2e-5 of the sum of |terms|, strict FP32's doubled: TF32 alone
// fails it); over the output: the relative error norm under 1e-6 (3xTF32 at FP32 level: the GEMM
// kernel measured 1.2e-7 to 3.3e-7; plain TF32 gives ~1e-4, the fp32 track's bound is 5e-5) and
// the largest absolute error is reported. The output starts as NaN: every element must be
// written. Label gpu; skips without a device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "conv_igemm_cases.cuh"
#include "conv_transpose_cases.cuh"
#include "kernel_test_support.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"
#include "kernels/conv_transpose.cuh"

namespace stitch::kernels {
namespace {

using testing::all_close;
using testing::ConvIgemmCase;
using testing::DeviceBuffer;
using testing::Tolerance;
using testing::transpose_batched;

constexpr double kNormBound = 1e-6;

// ||y - expected|| / ||expected||.
double relative_error_norm(const std::vector<float>& y, const std::vector<double>& expected) {
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < y.size(); ++i) {
    diff += (y[i] - expected[i]) * (y[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

// What every case checks after its first run gave `y` on `conv` (either convolution class):
// every element within the per-element bound (looser with GELU), the error norm printed (with
// the largest absolute error) and under kNormBound, and a second run bit-identical — one given
// the weight `w`, so split (and, transposed, gathered) per call, which also shows split K's
// tickets were left at zero.
template <class Conv>
void expect_accurate_and_repeatable(const char* tag, const std::string& name, Conv& conv,
                                    MatmulEpilogue epilogue, const std::vector<float>& y,
                                    const std::vector<double>& expected,
                                    const std::vector<double>& scale, const float* x,
                                    const float* w, const float* bias) {
  const bool gelu = epilogue == MatmulEpilogue::bias_gelu;
  EXPECT_TRUE(
      all_close(y, expected, gelu ? Tolerance{1e-5, 5e-5, 2e-5} : Tolerance{1e-6, 0, 2e-5}, &scale))
      << name << " on " << conv.describe();
  double max_abs = 0.0;
  for (size_t i = 0; i < y.size(); ++i)
    max_abs = std::max(max_abs, std::fabs(y[i] - expected[i]));
  const double error_norm = relative_error_norm(y, expected);
  std::printf("[ %s ] %s (%s): relative error norm %.3g, max abs error %.3g\n", tag, name.c_str(),
              conv.describe().c_str(), error_norm, max_abs);
  EXPECT_LE(error_norm, kNormBound) << name;
  DeviceBuffer<float> again(y.size());
  std::string error;
  ASSERT_EQ(conv.run(x, w, bias, again.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(testing::bitwise_equal(y, again.download())) << name;
}

// A case's operands (seeded, in [-1, 1]), its double reference with the per-element scale, and
// their device copies, y filled with NaN so that every output must be written.
struct CaseData {
  explicit CaseData(const ConvIgemmCase& c)
      : x(testing::uniform_floats(testing::conv_input_elements(c.shape), 11, -1.f, 1.f)),
        w(testing::uniform_floats(testing::conv_weight_elements(c.shape), 12, -1.f, 1.f)),
        bias(testing::uniform_floats(c.shape.out_channels, 13, -1.f, 1.f)),
        expected(testing::double_reference(c.shape, c.epilogue, x, w, bias, &scale)),
        dx(x.size()),
        dw(w.size()),
        db(bias.size()),
        dy(expected.size()) {}
  cudaError_t upload() {
    cudaError_t e = dx.upload(x);
    if (e == cudaSuccess) e = dw.upload(w);
    if (e == cudaSuccess) e = db.upload(bias);
    if (e == cudaSuccess) e = cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float));
    return e;
  }

  std::vector<float> x, w, bias;
  std::vector<double> scale;  // filled by double_reference(), before expected
  std::vector<double> expected;
  DeviceBuffer<float> dx, dw, db, dy;
};

// The kernel and A load a case runs on: mma.sync; wgmma on the NCDHW input; wgmma's chunked
// cp.async gather from its channels-last copy (where the channels per group allow; else the NCDHW
// gather again); wgmma's im2col TMA (wgmma_tma_*: only where conv_igemm_tma_im2col_problem allows
// it, else skipped); wgmma's TMA boxes of the NCDHW x (wgmma_box*: only where
// conv_igemm_box_tma_worth allows it, else skipped; the other variants turn the boxes off). The
// wgmma variants take the tile width ConvIgemm::init plans, except the
// *_wide, *_narrow and (one product only) *_widest ones, which force 128, 64 and 256: every case
// runs on every width.
enum class Variant {
  mma_sync,
  wgmma_ncdhw,
  wgmma,
  wgmma_wide,
  wgmma_narrow,
  wgmma_widest,
  wgmma_tma_wide,
  wgmma_tma_narrow,
  wgmma_tma_widest,
  wgmma_box,
  wgmma_box_narrow
};

std::string variant_name(Variant v) {
  switch (v) {
    case Variant::mma_sync:
      return "mma_sync";
    case Variant::wgmma_ncdhw:
      return "wgmma_ncdhw";
    case Variant::wgmma:
      return "wgmma";
    case Variant::wgmma_wide:
      return "wgmma_wide";
    case Variant::wgmma_narrow:
      return "wgmma_narrow";
    case Variant::wgmma_widest:
      return "wgmma_widest";
    case Variant::wgmma_tma_wide:
      return "wgmma_tma_wide";
    case Variant::wgmma_tma_narrow:
      return "wgmma_tma_narrow";
    case Variant::wgmma_tma_widest:
      return "wgmma_tma_widest";
    case Variant::wgmma_box:
      return "wgmma_box";
    case Variant::wgmma_box_narrow:
      return "wgmma_box_narrow";
  }
  return "?";
}

bool loads_by_box(Variant v) {
  return v == Variant::wgmma_box || v == Variant::wgmma_box_narrow;
}

bool loads_by_tma(Variant v) {
  return v == Variant::wgmma_tma_wide || v == Variant::wgmma_tma_narrow ||
         v == Variant::wgmma_tma_widest;
}

// The wgmma tile width a variant runs a shape with (0: the one init plans).
int forced_tile_n(Variant v) {
  if (v == Variant::wgmma_wide || v == Variant::wgmma_tma_wide) return 128;
  if (v == Variant::wgmma_narrow || v == Variant::wgmma_tma_narrow ||
      v == Variant::wgmma_box_narrow)
    return 64;
  if (v == Variant::wgmma_widest || v == Variant::wgmma_tma_widest) return 256;
  return 0;
}

// The width a variant's run of `s` should take, as init plans it on this device (its SM count
// decides whether the 256-wide tile would split K).
int expected_tile_n(Variant v, const ConvIgemmShape& s, Tf32Products products) {
  if (forced_tile_n(v) != 0) return forced_tile_n(v);
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return -1;
  detail::ConvIgemmParams p =
      detail::conv_igemm_params(nullptr, nullptr, nullptr, nullptr, s, MatmulEpilogue::none);
  int64_t m = p.m;  // the boxes' tiles count positions past the output
  if (loads_by_box(v)) detail::conv_igemm_box_params(p, s), m = int64_t{p.tiles_m} * 128;
  return detail::plan_conv_igemm_wgmma(s.groups, m, p.n, p.k, sms, 0, products).tile_n;
}

// Sets `conv` (either product count) up for a variant: its engine, A load and forced tile width.
template <class Conv>
void configure(Conv& conv, Variant v) {
  conv.set_engine(v == Variant::mma_sync ? Tf32x3Engine::mma_sync : Tf32x3Engine::wgmma);
  conv.allow_channels_last(v != Variant::mma_sync && v != Variant::wgmma_ncdhw);
  conv.allow_tma_im2col(loads_by_tma(v));
  conv.allow_box_tma(loads_by_box(v));
  conv.set_tile_n(forced_tile_n(v));
}

// Skips (visibly) a TMA variant on a shape the im2col TMA or the boxes cannot load.
#define REQUIRE_LOAD(variant, shape)                                             \
  do {                                                                           \
    if (loads_by_tma(variant) && !conv_igemm_tma_im2col_eligible(shape))         \
      GTEST_SKIP() << "no im2col TMA: " << conv_igemm_tma_im2col_problem(shape); \
    if (loads_by_box(variant) && !conv_igemm_box_tma_worth(shape))               \
      GTEST_SKIP() << "no boxes: " << box_refusal(shape);                        \
  } while (0)

// Why conv_igemm_box_tma_worth refuses a shape.
std::string box_refusal(const ConvIgemmShape& s) {
  const std::string bad = conv_igemm_box_tma_problem(s);
  return bad.empty() ? "its channels would pad to 32 by more than a third" : bad;
}

// Skips (visibly) a variant this build cannot run here (wgmma: a compute capability 9.0 GPU; the
// test is built for sm_90a with both kernels kept).
#define REQUIRE_VARIANT(variant)                                                                   \
  do {                                                                                             \
    std::string probe_error_;                                                                      \
    const int built_ = gemm_tf32x3_kernels_built(probe_error_);                                    \
    ASSERT_TRUE(probe_error_.empty()) << probe_error_;                                             \
    if (!(built_ &                                                                                 \
          ((variant) == Variant::mma_sync ? detail::kGemmBuiltMmaSync : detail::kGemmBuiltWgmma))) \
      GTEST_SKIP() << variant_name(variant) << " is not in this build's code for this device";     \
  } while (0)

class ConvIgemmTest : public ::testing::TestWithParam<std::tuple<ConvIgemmCase, Variant>> {};

TEST_P(ConvIgemmTest, MatchesTheDoubleReference) {
  REQUIRE_GPU();
  const auto& [c, variant] = GetParam();
  REQUIRE_VARIANT(variant);
  const ConvIgemmShape& s = c.shape;
  ASSERT_EQ(conv_igemm_shape_problem(s), "");
  REQUIRE_LOAD(variant, s);
  CaseData data(c);
  ASSERT_CUDA(data.upload());
  ConvIgemmTf32x3 conv;
  const bool wgmma = variant != Variant::mma_sync;
  const bool channels_last = wgmma && variant != Variant::wgmma_ncdhw && !loads_by_box(variant);
  configure(conv, variant);
  std::string error;
  ASSERT_EQ(conv.init(s, c.epilogue, error), STITCH_OK) << error;
  EXPECT_EQ(conv.uses_wgmma(), wgmma);
  EXPECT_EQ(conv.uses_channels_last(),
            channels_last && detail::conv_igemm_channels_last_eligible(s));
  EXPECT_EQ(conv.uses_tma_im2col(), loads_by_tma(variant)) << conv.describe();
  EXPECT_EQ(conv.uses_box_tma(), loads_by_box(variant)) << conv.describe();
  // The boxes read x as it arrives; the channels-last gathers read a copy.
  EXPECT_EQ(conv.copies_input(), conv.uses_channels_last()) << conv.describe();
  if (wgmma) EXPECT_EQ(conv.tile_n(), expected_tile_n(variant, s, Tf32Products::three));
  ASSERT_EQ(conv.prepare_weights(data.dw.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(data.dx.data(), nullptr, data.db.data(), data.dy.data(), nullptr, error),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  expect_accurate_and_repeatable("conv_igemm", c.name, conv, c.epilogue, data.dy.download(),
                                 data.expected, data.scale, data.dx.data(), data.dw.data(),
                                 data.db.data());
}

std::string case_variant_name(
    const ::testing::TestParamInfo<std::tuple<ConvIgemmCase, Variant>>& info) {
  return std::get<0>(info.param).name + "_" + variant_name(std::get<1>(info.param));
}

const auto kEveryVariant =
    ::testing::Values(Variant::mma_sync, Variant::wgmma_ncdhw, Variant::wgmma, Variant::wgmma_wide,
                      Variant::wgmma_narrow, Variant::wgmma_tma_wide, Variant::wgmma_tma_narrow,
                      Variant::wgmma_box, Variant::wgmma_box_narrow);

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIgemmTest,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_cases()),
                                            kEveryVariant),
                         case_variant_name);
INSTANTIATE_TEST_SUITE_P(TmaShapes, ConvIgemmTest,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_tma_cases()),
                                            kEveryVariant),
                         case_variant_name);
INSTANTIATE_TEST_SUITE_P(BoxShapes, ConvIgemmTest,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_box_cases()),
                                            kEveryVariant),
                         case_variant_name);

// One TF32 product (ConvIgemmTf32, the tf32 track) on the wgmma kernel: each element within TF32's
// rounding of its terms (both operands rounded to 11 bits: 2^-10 of the sum of |terms|, and the
// tensor cores' accumulation, with GELU's slope on top), the error norm within TF32's range — and
// above what three products reach (kNormBound 1e-6; measured 1e-7 to 3e-7), which shows the run
// made one product, not three — and a second run, the weight split per call, bit-identical.
class ConvIgemmTf32Test : public ::testing::TestWithParam<std::tuple<ConvIgemmCase, Variant>> {};

TEST_P(ConvIgemmTf32Test, MatchesTheDoubleReferenceToTf32Precision) {
  REQUIRE_GPU();
  const auto& [c, variant] = GetParam();
  REQUIRE_VARIANT(variant);
  const ConvIgemmShape& s = c.shape;
  REQUIRE_LOAD(variant, s);
  CaseData data(c);
  ASSERT_CUDA(data.upload());
  ConvIgemmTf32 conv;
  configure(conv, variant);
  std::string error;
  ASSERT_EQ(conv.init(s, c.epilogue, error), STITCH_OK) << error;
  EXPECT_EQ(conv.uses_tma_im2col(), loads_by_tma(variant)) << conv.describe();
  EXPECT_EQ(conv.uses_box_tma(), loads_by_box(variant)) << conv.describe();
  EXPECT_EQ(conv.tile_n(), expected_tile_n(variant, s, Tf32Products::one));
  EXPECT_NE(conv.describe().find("TF32 implicit GEMM"), std::string::npos) << conv.describe();
  EXPECT_EQ(conv.describe().find("3xTF32"), std::string::npos) << conv.describe();
  ASSERT_EQ(conv.prepare_weights(data.dw.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(data.dx.data(), nullptr, data.db.data(), data.dy.data(), nullptr, error),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> y = data.dy.download();
  const bool gelu = c.epilogue == MatmulEpilogue::bias_gelu;
  EXPECT_TRUE(all_close(y, data.expected, Tolerance{1e-6, 0, gelu ? 3e-3 : 1.5e-3}, &data.scale))
      << c.name;
  const double error_norm = relative_error_norm(y, data.expected);
  std::printf("[ conv_igemm_tf32 ] %s (%s): relative error norm %.3g\n", c.name.c_str(),
              conv.describe().c_str(), error_norm);
  EXPECT_LE(error_norm, 2e-3) << c.name;
  EXPECT_GT(error_norm, 10 * kNormBound) << c.name << ": as accurate as three products";
  DeviceBuffer<float> again(y.size());
  ASSERT_EQ(conv.run(data.dx.data(), data.dw.data(), data.db.data(), again.data(), nullptr, error),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(testing::bitwise_equal(y, again.download())) << c.name;
}

const auto kEveryWgmmaVariant =
    ::testing::Values(Variant::wgmma_ncdhw, Variant::wgmma, Variant::wgmma_wide,
                      Variant::wgmma_narrow, Variant::wgmma_widest, Variant::wgmma_tma_wide,
                      Variant::wgmma_tma_narrow, Variant::wgmma_tma_widest, Variant::wgmma_box,
                      Variant::wgmma_box_narrow);

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIgemmTf32Test,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_cases()),
                                            kEveryWgmmaVariant),
                         case_variant_name);
INSTANTIATE_TEST_SUITE_P(TmaShapes, ConvIgemmTf32Test,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_tma_cases()),
                                            kEveryWgmmaVariant),
                         case_variant_name);
INSTANTIATE_TEST_SUITE_P(BoxShapes, ConvIgemmTf32Test,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_box_cases()),
                                            kEveryWgmmaVariant),
                         case_variant_name);

// Misaligned weights (16-byte loads impossible) take the mma.sync kernel's 4-byte path and give
// the same result. (The wgmma kernel reads the weight only through its split copies.)
TEST(ConvIgemmTest, UnalignedWeightsTakeTheScalarLoads) {
  REQUIRE_GPU();
  REQUIRE_VARIANT(Variant::mma_sync);
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
  ASSERT_CUDA(detail::allow_conv_igemm_tf32x3_smem());
  ASSERT_CUDA(detail::launch_conv_igemm_tf32x3_mma_sync(dx.data(), dw_shifted.data() + 1, nullptr,
                                                        dy_shifted.data(), s, MatmulEpilogue::none,
                                                        nullptr));
  ASSERT_CUDA(detail::launch_conv_igemm_tf32x3_mma_sync(dx.data(), dw.data(), nullptr, dy.data(), s,
                                                        MatmulEpilogue::none, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(testing::bitwise_equal(dy.download(), dy_shifted.download()));
}

int64_t plane(const int64_t (&sizes)[3], int spatial) {
  int64_t positions = 1;
  for (int i = 0; i < spatial; ++i)
    positions *= sizes[i];
  return positions;
}

// launch_channels_last, the wgmma gather's copy of x: y[image][position][padded] = x's channel, or
// 0 past x's channels, on both of its kernels — the per-position one of 4 or 8 padded channels
// (an image network's 3 padded to 4; 6 and 8 to 8) and the 32 x 32 tiles otherwise — with images
// apart by more than their channels (a window of a larger buffer), position counts no block size
// divides, and the transposing use back to NCDHW (channels and positions swapped, padded =
// channels: a 2 x 2 image of 515 channels).
TEST(ChannelsLastCopy, EveryPathWritesTheTransposeWithZeroChannels) {
  REQUIRE_GPU();
  struct Case {
    int64_t batch, channels, padded, positions, x_image;
  };
  const Case cases[] = {{3, 3, 4, 1000, 3 * 1000},  {2, 6, 8, 777, 7 * 777},
                        {2, 8, 8, 1025, 8 * 1025},  {2, 4, 4, 33, 5 * 33},
                        {2, 12, 12, 515, 12 * 515}, {2, 40, 40, 97, 40 * 97},
                        {3, 4, 4, 515, 4 * 515},    {2, 3, 3, 130, 3 * 130}};
  for (const Case& c : cases) {
    const auto x = testing::uniform_floats(c.batch * c.x_image, 41, -1.f, 1.f);
    DeviceBuffer<float> dx(x.size()), dy(c.batch * c.positions * c.padded);
    ASSERT_CUDA(dx.upload(x));
    ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));
    ASSERT_CUDA(detail::launch_channels_last(dx.data(), dy.data(), c.batch, c.channels, c.positions,
                                             nullptr, detail::PlaneIdentity{}, c.x_image,
                                             c.padded));
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> y = dy.download();
    int wrong = 0;
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t p = 0; p < c.positions; ++p)
        for (int64_t ch = 0; ch < c.padded; ++ch) {
          const float want = ch < c.channels ? x[n * c.x_image + ch * c.positions + p] : 0.0f;
          if (y[(n * c.positions + p) * c.padded + ch] != want) ++wrong;
        }
    EXPECT_EQ(wrong, 0) << c.channels << " channels padded to " << c.padded << ", " << c.positions
                        << " positions";
  }
}

// Channels-last tensors, as a plan's channels-last values give them (layout.h): x arriving NDHWC
// (read as it is by the wgmma channels-last gather — through a copy with zero channels where it
// pads them — through an NCDHW copy on the other kernels)
// and y written NDHWC through the output map (channel stride 1: two channels per store on wgmma)
// give, transposed back, bit for bit what the NCDHW run gives on the same kernel and gather.
class ConvIgemmChannelsLastTest
    : public ::testing::TestWithParam<std::tuple<ConvIgemmCase, Variant>> {};

TEST_P(ConvIgemmChannelsLastTest, MatchesTheNcdhwRunBitForBit) {
  REQUIRE_GPU();
  const auto& [c, variant] = GetParam();
  REQUIRE_VARIANT(variant);
  const ConvIgemmShape& s = c.shape;
  REQUIRE_LOAD(variant, s);
  const int64_t in_plane = plane(s.input, s.spatial), out_plane = plane(s.output, s.spatial);
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 31, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 32, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 33, -1.f, 1.f);
  const std::vector<float> x_last = transpose_batched(x, s.batch, s.in_channels, in_plane);
  DeviceBuffer<float> dx(x.size()), dx_last(x.size()), dw(w.size()), db(bias.size()),
      dy(testing::conv_output_elements(s)), dy_last(dy.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dx_last.upload(x_last));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(cudaMemset(dy_last.data(), 0xff, dy_last.size() * sizeof(float)));
  std::string error;
  ConvIgemmTf32x3 dense, last;
  configure(dense, variant);
  configure(last, variant);
  last.set_input_channels_last(true);
  ConvIgemmOutputMap map;  // [image][position][channel], the 3-d view's unit dims in front
  map.image_floats = out_plane * s.out_channels, map.channel_floats = 1;
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  map.step[0] = d.output[1] * d.output[2] * s.out_channels;
  map.step[1] = d.output[2] * s.out_channels;
  map.step[2] = s.out_channels;
  last.set_output_map(map);
  ASSERT_EQ(dense.init(s, c.epilogue, error), STITCH_OK) << error;
  ASSERT_EQ(last.init(s, c.epilogue, error), STITCH_OK) << error;
  const bool gathers_last = (variant == Variant::wgmma || loads_by_tma(variant)) &&
                            detail::conv_igemm_channels_last_eligible(s);
  EXPECT_EQ(last.uses_channels_last(), gathers_last);
  EXPECT_EQ(last.uses_tma_im2col(), loads_by_tma(variant));  // reads x itself: a map per run
  // A channels-last x is copied only for the other gather, or padded with zero channels for it.
  EXPECT_EQ(last.copies_input(), !gathers_last || detail::conv_igemm_pads_channels(s))
      << last.describe();
  ASSERT_EQ(dense.run(dx.data(), dw.data(), db.data(), dy.data(), nullptr, error), STITCH_OK)
      << error;
  ASSERT_EQ(last.run(dx_last.data(), dw.data(), db.data(), dy_last.data(), nullptr, error),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> back =
      transpose_batched(dy_last.download(), s.batch, out_plane, s.out_channels);
  EXPECT_TRUE(testing::bitwise_equal(dy.download(), back)) << c.name << " on " << last.describe();
}

const auto kEveryLayoutVariant = ::testing::Values(Variant::mma_sync, Variant::wgmma_ncdhw,
                                                   Variant::wgmma, Variant::wgmma_tma_wide);

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIgemmChannelsLastTest,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_cases()),
                                            kEveryLayoutVariant),
                         case_variant_name);
INSTANTIATE_TEST_SUITE_P(TmaShapes, ConvIgemmChannelsLastTest,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_tma_cases()),
                                            kEveryLayoutVariant),
                         case_variant_name);

// x through set_input_transform's copy (transposed channels-last on the wgmma gather that reads
// so, NCDHW otherwise) gives bit for bit the run on x transformed beforehand, padding included
// (it pads the transformed input: relu(shift) is not zero), also where x is a window of whole
// channels of a larger buffer (a cat's piece: set_input_image_floats); transformed_input gives
// that x.
class ConvIgemmInputTransformTest
    : public ::testing::TestWithParam<std::tuple<ConvIgemmCase, Variant>> {};

TEST_P(ConvIgemmInputTransformTest, MatchesTheRunOnTheTransformedInputBitForBit) {
  REQUIRE_GPU();
  const auto& [c, variant] = GetParam();
  REQUIRE_VARIANT(variant);
  const ConvIgemmShape& s = c.shape;
  REQUIRE_LOAD(variant, s);
  const int64_t in_plane = plane(s.input, s.spatial), planes = s.batch * s.in_channels;
  const auto x = testing::uniform_floats(testing::conv_input_elements(s), 31, -1.f, 1.f);
  const auto w = testing::uniform_floats(testing::conv_weight_elements(s), 32, -1.f, 1.f);
  const auto bias = testing::uniform_floats(s.out_channels, 33, -1.f, 1.f);
  const auto scale = testing::uniform_floats(planes, 34, -2.f, 2.f);
  const auto shift = testing::uniform_floats(planes, 35, -0.5f, 1.f);
  std::vector<float> transformed(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const auto p = static_cast<size_t>(static_cast<int64_t>(i) / in_plane);
    transformed[i] = testing::AffineRelu::apply(x[i], scale[p], shift[p]);
  }
  // The window: channels 2 .. C + 1 of a buffer of C + 3 per image, the rest NaN.
  const int64_t image = s.in_channels * in_plane, wide_image = (s.in_channels + 3) * in_plane;
  std::vector<float> wide(static_cast<size_t>(s.batch * wide_image), std::nanf(""));
  for (int64_t n = 0; n < s.batch; ++n)
    std::copy_n(x.begin() + n * image, image, wide.begin() + n * wide_image + 2 * in_plane);
  DeviceBuffer<float> dx(x.size()), dx_transformed(x.size()), dw(w.size()), db(bias.size()),
      dscale(scale.size()), dshift(shift.size()), dy(testing::conv_output_elements(s)),
      dy_fused(dy.size()), dwide(wide.size()), dy_window(dy.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dwide.upload(wide));
  ASSERT_CUDA(dx_transformed.upload(transformed));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(dscale.upload(scale));
  ASSERT_CUDA(dshift.upload(shift));
  ASSERT_CUDA(cudaMemset(dy_fused.data(), 0xff, dy_fused.size() * sizeof(float)));
  std::string error;
  ConvIgemmTf32x3 plain, fused, window;
  configure(plain, variant);
  configure(fused, variant);
  configure(window, variant);
  fused.set_input_transform(true);
  window.set_input_transform(true);
  window.set_input_image_floats(wide_image);
  ASSERT_EQ(plain.init(s, c.epilogue, error), STITCH_OK) << error;
  ASSERT_EQ(fused.init(s, c.epilogue, error), STITCH_OK) << error;
  ASSERT_EQ(window.init(s, c.epilogue, error), STITCH_OK) << error;
  EXPECT_TRUE(fused.copies_input());
  const testing::AffineRelu transform{dscale.data(), dshift.data()};
  EXPECT_EQ(plain.run(dx.data(), dw.data(), db.data(), dy.data(), nullptr, error, transform),
            STITCH_ERROR_INVALID_ARGUMENT);  // not asked for one before init
  EXPECT_NE(error.find("set_input_transform"), std::string::npos) << error;
  ASSERT_EQ(plain.run(dx_transformed.data(), dw.data(), db.data(), dy.data(), nullptr, error),
            STITCH_OK)
      << error;
  ASSERT_EQ(fused.run(dx.data(), dw.data(), db.data(), dy_fused.data(), nullptr, error, transform),
            STITCH_OK)
      << error;
  ASSERT_EQ(window.run(dwide.data() + 2 * in_plane, dw.data(), db.data(), dy_window.data(), nullptr,
                       error, transform),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> expected = dy.download();
  EXPECT_TRUE(testing::bitwise_equal(expected, dy_fused.download()))
      << c.name << " on " << fused.describe();
  EXPECT_TRUE(testing::bitwise_equal(expected, dy_window.download()))
      << c.name << " on " << window.describe() << ", x a window";
  const float* copy = nullptr;
  ASSERT_EQ(fused.transformed_input(dx.data(), nullptr, transform, copy, error), STITCH_OK)
      << error;
  std::vector<float> copied(x.size());
  ASSERT_CUDA(
      cudaMemcpy(copied.data(), copy, copied.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_TRUE(testing::bitwise_equal(copied, transformed)) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvIgemmInputTransformTest,
                         ::testing::Combine(::testing::ValuesIn(testing::conv_igemm_cases()),
                                            kEveryLayoutVariant),
                         case_variant_name);

// ConvTransposeIgemmTf32x3 (kernels/conv_transpose.cuh): every output phase a forward
// convolution on the implicit GEMM (either kernel) writing through its output map, the outputs no
// tap reaches filled with act(bias), against the definition in double (conv_transpose_cases.cuh),
// by the bounds above; every output written (NaN first), a second run with the weight given (so
// gathered and split per call) bit-identical.
class ConvTransposeIgemmTest
    : public ::testing::TestWithParam<std::tuple<testing::ConvTransposeCase, Variant>> {};

TEST_P(ConvTransposeIgemmTest, MatchesTheDoubleReference) {
  REQUIRE_GPU();
  const auto& [c, variant] = GetParam();
  REQUIRE_VARIANT(variant);
  const ConvTransposeShape d = detail::conv_transpose_3d(c.shape);
  const int64_t in_plane = d.input[0] * d.input[1] * d.input[2];
  const int64_t volume = d.kernel[0] * d.kernel[1] * d.kernel[2];
  const auto x = testing::uniform_floats(d.batch * d.in_channels * in_plane, 31, -1.f, 1.f);
  const auto w =
      testing::uniform_floats(d.in_channels * (d.out_channels / d.groups) * volume, 32, -1.f, 1.f);
  const auto bias = testing::uniform_floats(d.out_channels, 33, -1.f, 1.f);
  std::vector<double> scale;
  const std::vector<double> expected =
      testing::conv_transpose_double_reference(c, x, w, bias, &scale);
  DeviceBuffer<float> dx(x.size()), dw(w.size()), db(bias.size()), dy(expected.size());
  ASSERT_CUDA(dx.upload(x));
  ASSERT_CUDA(dw.upload(w));
  ASSERT_CUDA(db.upload(bias));
  ASSERT_CUDA(cudaMemset(dy.data(), 0xff, dy.size() * sizeof(float)));  // NaN: every output written
  ConvTransposeIgemmTf32x3 conv;
  conv.set_engine(variant == Variant::mma_sync ? Tf32x3Engine::mma_sync : Tf32x3Engine::wgmma);
  std::string error;
  ASSERT_EQ(conv.init(c.shape, c.epilogue, error), STITCH_OK) << error;
  ASSERT_EQ(conv.prepare_weights(dw.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_EQ(conv.run(dx.data(), nullptr, db.data(), dy.data(), nullptr, error), STITCH_OK) << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  expect_accurate_and_repeatable("conv_transpose_igemm", c.name, conv, c.epilogue, dy.download(),
                                 expected, scale, dx.data(), dw.data(), db.data());
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvTransposeIgemmTest,
    ::testing::Combine(::testing::ValuesIn(testing::conv_transpose_cases()),
                       ::testing::Values(Variant::mma_sync, Variant::wgmma)),
    [](const ::testing::TestParamInfo<std::tuple<testing::ConvTransposeCase, Variant>>& info) {
      return std::get<0>(info.param).name + "_" + variant_name(std::get<1>(info.param));
    });

TEST(ConvTransposeIgemmTest, BadShapesAndCallsAreRefused) {
  ConvTransposeIgemmTf32x3 conv;
  std::string error;
  ConvTransposeShape s = testing::conv_transpose_case_shape(1, 4, 4, 1, {5, 5}, 3, 2, 1);
  s.output[0] += 3;  // not what the sizes give
  EXPECT_EQ(conv.init(s, MatmulEpilogue::none, error), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("output size"), std::string::npos) << error;
  float dummy = 0.0f;
  EXPECT_EQ(conv.run(&dummy, &dummy, nullptr, &dummy, nullptr, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("before a successful init"), std::string::npos) << error;
}

}  // namespace
}  // namespace stitch::kernels
