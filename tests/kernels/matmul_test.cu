// kernels/matmul.cuh on a GPU against a double-precision CPU GEMM: transposes, k not a multiple of
// 4, padded leading dimensions (padding must stay untouched), strided batches with A or B
// broadcast, every epilogue, alpha/beta accumulation (also in place), the heuristic's first
// algorithm and the tuned one, bit-identical reruns. The tolerance scales with sum |a||b| per
// element: FP32 rounding passes, TF32 (about 2^-11 per product) does not. Skips without a device.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/matmul.cuh"
#include "kernels/matmul_tf32x3.cuh"
#include "kernels/program_support.cuh"

namespace stitch::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Tolerance;

constexpr size_t kWorkspaceBytes = 32u << 20;

struct MatmulCase {
  std::string name;
  int64_t batch, m, n, k;
  bool trans_a = false, trans_b = false;
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  int64_t pad = 0;  // extra elements in every leading dimension
  bool broadcast_a = false, broadcast_b = false;
  bool accumulate = false;  // beta != 0: C is read
  bool in_place = false;    // c_in == d
  float alpha = 1.0f, beta = 0.0f;
};

std::vector<MatmulCase> cases() {
  using E = MatmulEpilogue;
  std::vector<MatmulCase> c = {
      {"tiny", 1, 1, 1, 1},
      {"odd_k5", 1, 33, 17, 5},
      {"square", 1, 128, 256, 64},
      {"trans_a", 1, 7, 3, 130, true, false},
      {"trans_b", 1, 64, 48, 33, false, true},
      {"trans_both", 1, 31, 29, 37, true, true},
      {"padded", 1, 40, 50, 60, false, false, E::none, 3},
      {"padded_trans_b", 1, 40, 50, 60, false, true, E::none, 5},
      {"long_k", 1, 3, 5, 4099},
      {"batched", 3, 20, 30, 40},
      {"batched_trans_a", 2, 20, 30, 40, true, false},
      // Shared B with back-to-back batches: folded into one GEMM of 64 rows.
      {"batched_broadcast_b_folded", 4, 16, 24, 32, false, false, E::none, 0, false, true},
      // Shared B that cannot fold (transposed A): a batched GEMM with B's stride 0.
      {"batched_broadcast_b_trans_a", 4, 16, 24, 32, true, false, E::none, 0, false, true},
      {"batched_broadcast_a", 4, 16, 24, 32, false, true, E::none, 0, true, false},
      {"bias_relu_batched", 3, 10, 12, 14, false, true, E::bias_relu},
      {"empty_m", 1, 0, 5, 7},
  };
  for (E e : {E::relu, E::gelu, E::bias, E::bias_relu, E::bias_gelu})
    c.push_back({"epilogue_" + std::to_string(static_cast<int>(e)), 1, 65, 70, 80, false, true, e});
  MatmulCase acc{"accumulate", 1, 30, 40, 50};
  acc.accumulate = true;
  acc.alpha = 2.0f;
  acc.beta = 0.5f;
  c.push_back(acc);
  // Long K with the epilogue and beta·C: 3xTF32 runs it in chunks (the first takes C, the last
  // the epilogue).
  MatmulCase chunked{"long_k_accumulate_bias_gelu", 2, 9, 20, 2100, true, false, E::bias_gelu, 1};
  chunked.accumulate = true;
  chunked.alpha = 0.5f;
  chunked.beta = -0.75f;
  c.push_back(chunked);
  MatmulCase in_place{"accumulate_in_place_bias", 1, 30, 40, 50, false, true, E::bias, 2};
  in_place.accumulate = true;
  in_place.in_place = true;
  in_place.beta = 1.0f;
  c.push_back(in_place);
  return c;
}

struct Problem {
  MatmulShape shape;
  int64_t a_elements, b_elements, c_elements;
};

Problem make_problem(const MatmulCase& c) {
  Problem p;
  MatmulShape& s = p.shape;
  s.batch = c.batch;
  s.m = c.m;
  s.n = c.n;
  s.k = c.k;
  s.trans_a = c.trans_a;
  s.trans_b = c.trans_b;
  const int64_t a_rows = c.trans_a ? c.k : c.m, a_cols = c.trans_a ? c.m : c.k;
  const int64_t b_rows = c.trans_b ? c.n : c.k, b_cols = c.trans_b ? c.k : c.n;
  s.lda = a_cols + c.pad;
  s.ldb = b_cols + c.pad;
  s.ldc = c.n + c.pad;
  s.stride_a = c.broadcast_a ? 0 : a_rows * s.lda;
  s.stride_b = c.broadcast_b ? 0 : b_rows * s.ldb;
  s.stride_c = c.m * s.ldc;
  p.a_elements = (c.broadcast_a ? 1 : c.batch) * a_rows * s.lda;
  p.b_elements = (c.broadcast_b ? 1 : c.batch) * b_rows * s.ldb;
  p.c_elements = c.batch * c.m * s.ldc;
  return p;
}

Tolerance tolerance(const MatmulCase& c) {
  // GELU: cuBLASLt's tanh may be approximate; held to the fp32 track's verification tolerance.
  if (c.epilogue == MatmulEpilogue::gelu || c.epilogue == MatmulEpilogue::bias_gelu)
    return Tolerance{1e-5, 5e-5, 1e-5};
  return Tolerance{1e-6, 0.0, 1e-5};
}

struct LtHandle {
  cublasLtHandle_t handle = nullptr;
  LtHandle() { cublasLtCreate(&handle); }
  ~LtHandle() {
    if (handle) cublasLtDestroy(handle);
  }
};

// Test listings show the case name instead of the parameter's bytes.
void PrintTo(const MatmulCase& c, std::ostream* os) {
  *os << c.name;
}

class MatmulTest : public ::testing::TestWithParam<MatmulCase> {};

// One case through `Mm` (LtMatmul or Tf32x3Matmul): heuristic's first algorithm, then tuned; each
// run checked against the reference and rerun for identical bits.
template <class Mm>
void check_case(const MatmulCase& c, const Tolerance& tol) {
  const Problem p = make_problem(c);
  LtHandle lt;
  ASSERT_NE(lt.handle, nullptr);
  DeviceBuffer<uint8_t> workspace(kWorkspaceBytes);

  const std::vector<float> a = testing::uniform_floats(p.a_elements, 1, -1.0f, 1.0f);
  const std::vector<float> b = testing::uniform_floats(p.b_elements, 2, -1.0f, 1.0f);
  const std::vector<float> c_in = testing::uniform_floats(p.c_elements, 3, -1.0f, 1.0f);
  const std::vector<float> bias = testing::uniform_floats(c.n > 0 ? c.n : 1, 4, -1.0f, 1.0f);
  // D starts as C when in place, otherwise as a canary the padding must keep.
  const std::vector<float> d_initial = c.in_place ? c_in : std::vector<float>(p.c_elements, 7.25f);
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
  Mm mm;
  ASSERT_EQ(mm.init(lt.handle, p.shape, c.epilogue, c.accumulate, workspace.data(), kWorkspaceBytes,
                    error),
            STITCH_OK)
      << error;
  auto run_and_check = [&](const char* stage, const float* b_ptr) {
    ASSERT_CUDA(d_dev.upload(d_initial));
    ASSERT_EQ(mm.run(a_dev.data(), b_ptr, c_ptr, d_dev.data(), bias_ptr, c.alpha, c.beta, nullptr,
                     error),
              STITCH_OK)
        << stage << ": " << error;
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> d = d_dev.download();
    EXPECT_TRUE(testing::all_close(d, expected, tol, &scale)) << stage << " with " << mm.describe();
    // A rerun gives the same bits.
    ASSERT_CUDA(d_dev.upload(d_initial));
    ASSERT_EQ(mm.run(a_dev.data(), b_ptr, c_ptr, d_dev.data(), bias_ptr, c.alpha, c.beta, nullptr,
                     error),
              STITCH_OK);
    ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(testing::bitwise_equal(d_dev.download(), d)) << stage << ": rerun differs";
  };
  run_and_check("heuristic's first algorithm", b_dev.data());

  DeviceBuffer<float> scratch(p.c_elements);
  ASSERT_EQ(mm.tune(a_dev.data(), b_dev.data(), scratch.data(), bias_ptr, nullptr, error),
            STITCH_OK)
      << error;
  run_and_check("tuned algorithm", b_dev.data());
  const std::string described = mm.describe();
  if (c.m > 0 && c.n > 0) EXPECT_NE(described.find("algo "), std::string::npos) << described;
  if constexpr (std::is_same_v<Mm, Tf32x3Matmul>) {
    // A constant B split once (a parameter, at init), then run without it.
    ASSERT_EQ(mm.prepare_b(b_dev.data(), nullptr, error), STITCH_OK) << error;
    run_and_check("prepared B", nullptr);
  }
}

TEST_P(MatmulTest, MatchesReference) {
  REQUIRE_GPU();
  check_case<LtMatmul>(GetParam(), tolerance(GetParam()));
}

// Split-precision 3xTF32: FP32-level error on TF32 tensor cores. The bound is the strict one
// scaled by 2 (three times the products, FP32 accumulation); plain TF32 (~2^-11 per product)
// exceeds it on these cases.
TEST_P(MatmulTest, Tf32x3MatchesReferenceAtFp32Level) {
  REQUIRE_GPU();
  Tolerance tol = tolerance(GetParam());
  tol.mtol *= 2.0;
  check_case<Tf32x3Matmul>(GetParam(), tol);
}

INSTANTIATE_TEST_SUITE_P(Cases, MatmulTest, ::testing::ValuesIn(cases()),
                         testing::case_name<MatmulCase>);

// Same-signed operands and a long K: a tensor core's truncating FP32 accumulation shrinks every
// partial sum, so one accumulation over the whole split K axis is ~1.2e-4 off at k = 8192 (seen
// on an H200 on KernelBench's level-1 matmuls), over the fp32 track's 5e-5. In chunks it stays at
// FP32 level.
TEST(Tf32x3, LongSameSignedSumsStayAtFp32Level) {
  REQUIRE_GPU();
  const int64_t m = 64, n = 64, k = 8192;
  MatmulShape shape;
  shape.m = m;
  shape.n = n;
  shape.k = k;
  shape.lda = k;
  shape.ldb = n;
  shape.ldc = n;
  const std::vector<float> a = testing::uniform_floats(m * k, 11, 0.0f, 1.0f);
  const std::vector<float> b = testing::uniform_floats(k * n, 12, 0.0f, 1.0f);
  DeviceBuffer<float> a_dev(a.size()), b_dev(b.size()), d_dev(m * n);
  ASSERT_CUDA(a_dev.upload(a));
  ASSERT_CUDA(b_dev.upload(b));
  LtHandle lt;
  DeviceBuffer<uint8_t> workspace(kWorkspaceBytes);
  std::string error;
  Tf32x3Matmul mm;
  ASSERT_EQ(mm.init(lt.handle, shape, MatmulEpilogue::none, false, workspace.data(),
                    kWorkspaceBytes, error),
            STITCH_OK)
      << error;
  EXPECT_GT(mm.chunks(), 1) << mm.describe();
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
      for (int64_t q = 0; q < k; ++q) sum += double(a[i * k + q]) * double(b[q * n + j]);
      diff += (d[i * n + j] - sum) * (d[i * n + j] - sum);
      norm += sum * sum;
    }
  const double relative_error_norm = std::sqrt(diff / norm);
  EXPECT_LT(relative_error_norm, 3e-5) << mm.describe();
  std::printf("3xTF32, k = %lld, same-signed operands: relative error norm %.3g (%s)\n",
              static_cast<long long>(k), relative_error_norm, mm.describe().c_str());
}

// strict FP32 timed against a split GEMM (time_gemm_against_strict, kernels/program_support.cuh,
// the plan's strict_alternative): the two sides give the same GEMM with bias + ReLU within FP32
// rounding, and the timing runs on its scratch (B prepared, as a parameter's is, and not).
TEST(Tf32x3, StrictFp32TimedAgainstTheSplitGemm) {
  REQUIRE_GPU();
  const int64_t m = 96, n = 80, k = 300;
  MatmulShape shape;
  shape.m = m, shape.n = n, shape.k = k;
  shape.lda = k, shape.ldb = n, shape.ldc = n;
  const std::vector<float> a = testing::uniform_floats(m * k, 21, -1.0f, 1.0f);
  const std::vector<float> b = testing::uniform_floats(k * n, 22, -1.0f, 1.0f);
  const std::vector<float> bias = testing::uniform_floats(n, 23, -1.0f, 1.0f);
  DeviceBuffer<float> a_dev(a.size()), b_dev(b.size()), bias_dev(n), split_d(m * n),
      strict_d(m * n);
  ASSERT_CUDA(a_dev.upload(a));
  ASSERT_CUDA(b_dev.upload(b));
  ASSERT_CUDA(bias_dev.upload(bias));
  LtHandle lt;
  DeviceBuffer<uint8_t> workspace(kWorkspaceBytes);
  std::string error;
  for (bool b_prepared : {false, true}) {
    Tf32x3Matmul split;
    LtMatmul strict;
    ASSERT_EQ(split.init(lt.handle, shape, MatmulEpilogue::bias_relu, false, workspace.data(),
                         kWorkspaceBytes, error),
              STITCH_OK)
        << error;
    ASSERT_EQ(strict.init(lt.handle, shape, MatmulEpilogue::bias_relu, false, workspace.data(),
                          kWorkspaceBytes, error),
              STITCH_OK)
        << error;
    ASSERT_EQ(tune_on_scratch(strict, m * k, k * n, m * n, n, nullptr, error), STITCH_OK) << error;
    if (b_prepared) ASSERT_EQ(split.prepare_b(b_dev.data(), nullptr, error), STITCH_OK) << error;
    bool strict_faster = false;
    ASSERT_EQ(time_gemm_against_strict(split, b_prepared, strict, m * k, k * n, m * n, n, false,
                                       nullptr, error, strict_faster),
              STITCH_OK)
        << error;
    ASSERT_EQ(split.run(a_dev.data(), b_prepared ? nullptr : b_dev.data(), nullptr, split_d.data(),
                        bias_dev.data(), 1.0f, 0.0f, nullptr, error),
              STITCH_OK)
        << error;
    ASSERT_EQ(strict.run(a_dev.data(), b_dev.data(), nullptr, strict_d.data(), bias_dev.data(),
                         1.0f, 0.0f, nullptr, error),
              STITCH_OK)
        << error;
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> by_strict = strict_d.download();
    const std::vector<double> expected(by_strict.begin(), by_strict.end());
    EXPECT_TRUE(all_close(split_d.download(), expected, Tolerance{1e-4, 1e-5, 0}))
        << split.describe();
    std::printf("[ timing ] %s, B %s: %s\n", split.describe().c_str(),
                b_prepared ? "prepared" : "per call",
                strict_faster ? "strict FP32 faster" : "split faster");
  }
}

TEST(Matmul, RejectsWhatInitWasNotPromised) {
  REQUIRE_GPU();
  LtHandle lt;
  DeviceBuffer<uint8_t> workspace(kWorkspaceBytes);
  MatmulShape s;
  s.m = 8;
  s.n = 8;
  s.k = 8;
  s.lda = s.ldb = s.ldc = 8;
  DeviceBuffer<float> a(64 + 1), b(64), d(64), bias(8);
  std::string error;
  LtMatmul mm;
  ASSERT_EQ(
      mm.init(lt.handle, s, MatmulEpilogue::bias, false, workspace.data(), kWorkspaceBytes, error),
      STITCH_OK)
      << error;
  // a + 1 is only 4-byte aligned; init promised 16.
  EXPECT_EQ(
      mm.run(a.data() + 1, b.data(), nullptr, d.data(), bias.data(), 1.0f, 0.0f, nullptr, error),
      STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("aligned"), std::string::npos) << error;
  EXPECT_EQ(mm.run(a.data(), b.data(), nullptr, d.data(), bias.data(), 1.0f, 0.5f, nullptr, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mm.run(a.data(), b.data(), nullptr, d.data(), nullptr, 1.0f, 0.0f, nullptr, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  // With alignment 4 promised, the same pointer runs.
  LtMatmul loose;
  ASSERT_EQ(loose.init(lt.handle, s, MatmulEpilogue::bias, false, workspace.data(), kWorkspaceBytes,
                       error, 4),
            STITCH_OK)
      << error;
  EXPECT_EQ(
      loose.run(a.data() + 1, b.data(), nullptr, d.data(), bias.data(), 1.0f, 0.0f, nullptr, error),
      STITCH_OK)
      << error;
  ASSERT_CUDA(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace stitch::kernels
