// kernels/gemm_tf32x3.cuh (GemmTf32x3: the mma.sync 3xTF32 kernel, and on an sm_90a build on a
// compute capability 9.0 GPU the wgmma one, each case on both engines) on a GPU against a double
// CPU GEMM: sizes that are not multiples of the 128 x 128 x 32 tile, K not a multiple of 4 and
// padded leading dimensions (the 4-byte load path), K beyond 3072, B as [k,n] and as a weight
// [n,k], strided and broadcast batches, every epilogue, alpha/beta (also in place), split K
// (partials and tickets: a rerun gives the same bits), B prepared at init, and same-signed long
// sums. The output starts poisoned (NaN); padding must keep its canary. The tolerance is the strict
// FP32 one of matmul_test.cu scaled by 2, as for Tf32x3Matmul. The plan (split K) is checked on the
// CPU. Besides the per-element bound, the relative error norm of every case must stay under the
// fp32 track's bound (docs/verify-protocol.md: 5e-5). The wgmma cases skip, visibly, where that
// kernel cannot run. Skips without a device.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/gemm_tf32x3.cuh"

namespace stitch::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Tolerance;

struct GemmCase {
  std::string name;
  int64_t batch, m, n, k;
  bool trans_b = false;
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  int64_t pad = 0;  // extra elements in every leading dimension
  bool broadcast_a = false, broadcast_b = false;
  bool accumulate = false, in_place = false;
  float alpha = 1.0f, beta = 0.0f;
};

std::vector<GemmCase> cases() {
  using E = MatmulEpilogue;
  std::vector<GemmCase> c = {
      {"tiny", 1, 1, 1, 1},
      {"odd_k45", 1, 130, 70, 45},  // 4-byte loads, one partial tile each way
      {"odd_k45_weight", 1, 130, 70, 45, true},
      {"tiles_257x129", 1, 257, 129, 100, true, E::bias},
      {"tiles_257x129_kn", 1, 257, 129, 100, false, E::bias},
      {"long_k5000", 1, 150, 90, 5000, true},      // k > 3072
      {"long_k5001_kn", 1, 70, 200, 5001, false},  // k > 3072, 4-byte loads
      {"padded", 1, 40, 50, 64, false, E::none, 3},
      {"padded_weight", 1, 40, 50, 64, true, E::none, 5},
      {"batched", 3, 70, 140, 96},
      {"batched_weight", 3, 70, 140, 96, true},
      // Shared B with back-to-back batches: folded into one GEMM of 3·70 rows.
      {"batched_broadcast_b_folded", 3, 70, 40, 36, true, E::none, 0, false, true},
      // Padded rows still fold (batches are m·ld apart); 4-byte loads.
      {"batched_broadcast_b_padded_folded", 2, 30, 40, 36, false, E::none, 2, false, true},
      {"batched_broadcast_a", 4, 16, 24, 32, false, E::none, 0, true, false},
      {"bias_relu_batched", 3, 10, 12, 14, true, E::bias_relu},
      // Few tiles, long K: split 8 ways; the last block of a tile sums the partials.
      {"split_k", 1, 64, 256, 4096, true, E::bias_gelu},
      {"split_k_batched_kn", 2, 100, 130, 2048, false, E::bias},
      {"empty_m", 1, 0, 5, 7},
      // K tiles 1, 2, 3 and 4: the wgmma kernel's ring prologue (3 tiles ahead) and its
      // alternating split buffers, on both B layouts.
      {"k_tiles_1", 1, 200, 140, 32, true},
      {"k_tiles_2_kn", 1, 200, 140, 64, false},
      {"k_tiles_3", 1, 130, 260, 96, true},
      {"k_tiles_4_kn_ragged", 1, 129, 255, 127, false},
      // Many tiles (grouped order over 8 tile rows, a ragged last group), long K.
      {"tiles_9x5_k1200", 1, 1100, 600, 1200, true, E::bias_relu},
      {"tiles_9x5_k1201_kn_unaligned", 1, 1100, 601, 1201, false, E::bias},
      // More output tiles than an H200's 132 SMs: the persistent wgmma kernel's blocks take
      // several each, the ring's slots and phases running on across them (3 and 5 K tiles per
      // output tile: a tile's first K tile lands on every slot of the 4-stage ring).
      {"persistent_k_tiles_3_batched_kn", 2, 1100, 2100, 96, false, E::bias},
      {"persistent_k_tiles_5_ragged", 1, 1300, 2000, 150, true, E::relu},
  };
  for (E e : {E::relu, E::gelu, E::bias, E::bias_relu, E::bias_gelu})
    c.push_back({"epilogue_" + std::to_string(static_cast<int>(e)), 1, 65, 70, 80, true, e});
  GemmCase acc{"accumulate", 1, 30, 40, 50};
  acc.accumulate = true;
  acc.alpha = 2.0f;
  acc.beta = 0.5f;
  c.push_back(acc);
  GemmCase long_acc{"long_k_accumulate_bias_gelu", 2, 9, 20, 3500, true, E::bias_gelu, 1};
  long_acc.accumulate = true;
  long_acc.alpha = 0.5f;
  long_acc.beta = -0.75f;
  c.push_back(long_acc);
  GemmCase in_place{"accumulate_in_place_bias", 1, 30, 40, 50, true, E::bias, 2};
  in_place.accumulate = true;
  in_place.in_place = true;
  in_place.beta = 1.0f;
  c.push_back(in_place);
  return c;
}

void PrintTo(const GemmCase& c, std::ostream* os) {
  *os << c.name;
}

struct Problem {
  MatmulShape shape;
  int64_t a_elements, b_elements, c_elements;
};

Problem make_problem(const GemmCase& c) {
  Problem p;
  MatmulShape& s = p.shape;
  s.batch = c.batch, s.m = c.m, s.n = c.n, s.k = c.k, s.trans_b = c.trans_b;
  const int64_t b_rows = c.trans_b ? c.n : c.k, b_cols = c.trans_b ? c.k : c.n;
  s.lda = c.k + c.pad;
  s.ldb = b_cols + c.pad;
  s.ldc = c.n + c.pad;
  s.stride_a = c.broadcast_a ? 0 : c.m * s.lda;
  s.stride_b = c.broadcast_b ? 0 : b_rows * s.ldb;
  s.stride_c = c.m * s.ldc;
  p.a_elements = (c.broadcast_a ? 1 : c.batch) * c.m * s.lda;
  p.b_elements = (c.broadcast_b ? 1 : c.batch) * b_rows * s.ldb;
  p.c_elements = c.batch * c.m * s.ldc;
  return p;
}

// matmul_test.cu's strict FP32 bound, times 2 (three products per term, FP32 accumulation).
Tolerance tolerance(const GemmCase& c) {
  if (c.epilogue == MatmulEpilogue::gelu || c.epilogue == MatmulEpilogue::bias_gelu)
    return Tolerance{1e-5, 5e-5, 2e-5};
  return Tolerance{1e-6, 0.0, 2e-5};
}

using Engine = GemmTf32x3::Engine;

std::string engine_name(Engine e) {
  return e == Engine::wgmma ? "wgmma" : e == Engine::mma_sync ? "mma_sync" : "automatic";
}

// Skips (visibly) a case whose kernel this build cannot run here (wgmma: a compute capability
// 9.0 GPU; this test is built for sm_90a with both kernels kept).
#define REQUIRE_ENGINE(engine)                                                                \
  do {                                                                                        \
    std::string probe_error_;                                                                 \
    const int built_ = gemm_tf32x3_kernels_built(probe_error_);                               \
    ASSERT_TRUE(probe_error_.empty()) << probe_error_;                                        \
    if (!(built_ &                                                                            \
          ((engine) == Engine::wgmma ? detail::kGemmBuiltWgmma : detail::kGemmBuiltMmaSync))) \
      GTEST_SKIP() << engine_name(engine) << " is not in this build's code for this device";  \
  } while (0)

// sqrt(sum (d - expected)^2 / sum expected^2) over the [m, n] elements of every batch.
double relative_error_norm(const GemmCase& c, const MatmulShape& s, const std::vector<float>& d,
                           const std::vector<double>& expected) {
  double diff = 0.0, norm = 0.0;
  for (int64_t batch = 0; batch < c.batch; ++batch)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const int64_t at = batch * s.stride_c + i * s.ldc + j;
        diff += (d[at] - expected[at]) * (d[at] - expected[at]);
        norm += expected[at] * expected[at];
      }
  return norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

constexpr double kFp32TrackNormBound = 5e-5;  // docs/verify-protocol.md

class GemmTf32x3Test : public ::testing::TestWithParam<std::tuple<GemmCase, Engine>> {};

TEST_P(GemmTf32x3Test, MatchesReferenceAtFp32Level) {
  REQUIRE_GPU();
  const GemmCase& c = std::get<0>(GetParam());
  const Engine engine = std::get<1>(GetParam());
  REQUIRE_ENGINE(engine);
  const Problem p = make_problem(c);
  const std::vector<float> a = testing::uniform_floats(p.a_elements, 1, -1.0f, 1.0f);
  const std::vector<float> b = testing::uniform_floats(p.b_elements, 2, -1.0f, 1.0f);
  const std::vector<float> c_in = testing::uniform_floats(p.c_elements, 3, -1.0f, 1.0f);
  const std::vector<float> bias = testing::uniform_floats(c.n > 0 ? c.n : 1, 4, -1.0f, 1.0f);
  // D starts as C when in place; otherwise NaN inside [m, n] (every element must be written) and
  // a canary in the padding (which must stay).
  std::vector<float> d_initial = c.in_place ? c_in : std::vector<float>(p.c_elements, 7.25f);
  if (!c.in_place)
    for (int64_t batch = 0; batch < c.batch; ++batch)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t j = 0; j < c.n; ++j)
          d_initial[batch * p.shape.stride_c + i * p.shape.ldc + j] =
              std::numeric_limits<float>::quiet_NaN();
  DeviceBuffer<float> a_dev(a.size()), b_dev(b.size()), c_dev(c_in.size()), d_dev(d_initial.size()),
      bias_dev(bias.size());
  ASSERT_CUDA(a_dev.upload(a));
  ASSERT_CUDA(b_dev.upload(b));
  ASSERT_CUDA(c_dev.upload(c_in));
  ASSERT_CUDA(bias_dev.upload(bias));
  const float* bias_ptr = epilogue_has_bias(c.epilogue) ? bias_dev.data() : nullptr;
  const float* c_ptr = c.accumulate ? (c.in_place ? d_dev.data() : c_dev.data()) : nullptr;
  std::vector<double> expected, scale;
  testing::gemm_reference(c, p.shape, a, b, c_in, bias, d_initial, expected, scale);

  std::string error;
  GemmTf32x3 mm;
  mm.set_engine(engine);
  ASSERT_EQ(mm.init(nullptr, p.shape, c.epilogue, c.accumulate, nullptr, 0, error), STITCH_OK)
      << error;
  EXPECT_EQ(mm.uses_wgmma(), engine == Engine::wgmma) << mm.describe();
  std::vector<float> first;
  auto run_and_check = [&](const char* stage, const float* b_ptr) {
    ASSERT_CUDA(d_dev.upload(d_initial));
    ASSERT_EQ(
        mm.run(a_dev.data(), b_ptr, c_ptr, d_dev.data(), bias_ptr, c.alpha, c.beta, nullptr, error),
        STITCH_OK)
        << stage << ": " << error;
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> d = d_dev.download();
    EXPECT_TRUE(testing::all_close(d, expected, tolerance(c), &scale))
        << stage << " with " << mm.describe();
    EXPECT_LE(relative_error_norm(c, p.shape, d, expected), kFp32TrackNormBound)
        << stage << " with " << mm.describe();
    if (first.empty()) first = d;
    EXPECT_TRUE(testing::bitwise_equal(d, first)) << stage << ": a rerun differs";
  };
  run_and_check("first run", b_dev.data());
  run_and_check("rerun", b_dev.data());
  ASSERT_EQ(mm.tune(a_dev.data(), b_dev.data(), d_dev.data(), bias_ptr, nullptr, error), STITCH_OK);
  ASSERT_EQ(mm.prepare_b(b_dev.data(), nullptr, error), STITCH_OK) << error;
  run_and_check("prepared B", nullptr);
  if (c.name.rfind("split_k", 0) == 0) EXPECT_GT(mm.splits(), 1) << mm.describe();
}

INSTANTIATE_TEST_SUITE_P(Cases, GemmTf32x3Test,
                         ::testing::Combine(::testing::ValuesIn(cases()),
                                            ::testing::Values(Engine::mma_sync, Engine::wgmma)),
                         [](const auto& info) {
                           return std::get<0>(info.param).name + "_" +
                                  engine_name(std::get<1>(info.param));
                         });

// Built for sm_90a (tests/kernels/CMakeLists.txt) and run on a compute capability 9.0 GPU, the
// automatic choice is the wgmma kernel; elsewhere mma.sync.
TEST(GemmTf32x3, AutomaticPicksWgmmaOnHopper) {
  REQUIRE_GPU();
  int device = 0, major = 0, minor = 0;
  ASSERT_CUDA(cudaGetDevice(&device));
  ASSERT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  ASSERT_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  MatmulShape s;
  s.m = 8, s.n = 8, s.k = 8, s.lda = 8, s.ldb = 8, s.ldc = 8;
  std::string error;
  GemmTf32x3 mm;
  ASSERT_EQ(mm.init(nullptr, s, MatmulEpilogue::none, false, nullptr, 0, error), STITCH_OK)
      << error;
  EXPECT_EQ(mm.uses_wgmma(), major == 9 && minor == 0) << mm.describe();
}

// Same-signed operands and k = 8192: a tensor core's truncating accumulation over the whole K
// would be ~1.2e-4 off (matmul_tf32x3.cuh); summed per K tile in FP32 it stays at FP32 level.
class GemmTf32x3Engines : public ::testing::TestWithParam<Engine> {};

TEST_P(GemmTf32x3Engines, LongSameSignedSumsStayAtFp32Level) {
  REQUIRE_GPU();
  REQUIRE_ENGINE(GetParam());
  const int64_t m = 64, n = 64, k = 8192;
  MatmulShape shape;
  shape.m = m, shape.n = n, shape.k = k, shape.lda = k, shape.ldb = n, shape.ldc = n;
  const std::vector<float> a = testing::uniform_floats(m * k, 11, 0.0f, 1.0f);
  const std::vector<float> b = testing::uniform_floats(k * n, 12, 0.0f, 1.0f);
  DeviceBuffer<float> a_dev(a.size()), b_dev(b.size()), d_dev(m * n);
  ASSERT_CUDA(a_dev.upload(a));
  ASSERT_CUDA(b_dev.upload(b));
  std::string error;
  GemmTf32x3 mm;
  mm.set_engine(GetParam());
  ASSERT_EQ(mm.init(nullptr, shape, MatmulEpilogue::none, false, nullptr, 0, error), STITCH_OK)
      << error;
  ASSERT_EQ(mm.run(a_dev.data(), b_dev.data(), nullptr, d_dev.data(), nullptr, 1.0f, 0.0f, nullptr,
                   error),
            STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> d = d_dev.download();
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t q = 0; q < k; ++q)
        sum += double(a[i * k + q]) * double(b[q * n + j]);
      diff += (d[i * n + j] - sum) * (d[i * n + j] - sum);
      norm += sum * sum;
    }
  const double error_norm = std::sqrt(diff / norm);
  EXPECT_LT(error_norm, 3e-6) << mm.describe();
  std::printf("GemmTf32x3, k = %lld, same-signed operands: relative error norm %.3g (%s)\n",
              static_cast<long long>(k), error_norm, mm.describe().c_str());
}

INSTANTIATE_TEST_SUITE_P(Engines, GemmTf32x3Engines,
                         ::testing::Values(Engine::mma_sync, Engine::wgmma),
                         [](const auto& info) { return engine_name(info.param); });

TEST(GemmTf32x3, RejectsWhatItDoesNotSupport) {
  REQUIRE_GPU();
  MatmulShape s;
  s.m = 4, s.n = 4, s.k = 4, s.lda = 4, s.ldb = 4, s.ldc = 4;
  std::string error;
  GemmTf32x3 mm;
  s.trans_a = true;
  EXPECT_EQ(mm.init(nullptr, s, MatmulEpilogue::none, false, nullptr, 0, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("trans_a"), std::string::npos) << error;
  s.trans_a = false;
  s.k = 0;
  EXPECT_EQ(mm.init(nullptr, s, MatmulEpilogue::none, false, nullptr, 0, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  s.k = 4;
  ASSERT_EQ(mm.init(nullptr, s, MatmulEpilogue::bias, false, nullptr, 0, error), STITCH_OK);
  DeviceBuffer<float> buf(16);
  EXPECT_EQ(
      mm.run(buf.data(), buf.data(), nullptr, buf.data(), nullptr, 1.0f, 0.0f, nullptr, error),
      STITCH_ERROR_INVALID_ARGUMENT);  // the bias epilogue without a bias
  EXPECT_EQ(
      mm.run(buf.data(), buf.data(), nullptr, buf.data(), buf.data(), 1.0f, 1.0f, nullptr, error),
      STITCH_ERROR_INVALID_ARGUMENT);  // beta without accumulate_c
}

}  // namespace
}  // namespace stitch::kernels
