// The host-side halves of the kernel library, without a GPU: the checked-call macros and status
// codes, Arena arithmetic, the fast divider, dimension coalescing and the elementwise path choice,
// the reduction and row strategies and workspace sizes, the row-major → cuBLASLt mapping and
// LtMatmul's argument checks, which pools take the tiled path. Label cpu.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/elementwise.cuh"
#include "kernels/gemm_tf32x3.cuh"
#include "kernels/matmul.cuh"
#include "kernels/matmul_tf32x3.cuh"
#include "kernels/pooling.cuh"
#include "kernels/program_support.cuh"
#include "kernels/reduction.cuh"
#include "kernels/row.cuh"
#include "kernels/runtime.cuh"
#include "kernels/scalar_ops.cuh"
#include "stitch/program.h"  // after runtime.cuh: its status macros must be identical redefinitions

namespace stitch::kernels {
namespace {

// ---- runtime.cuh ----

TEST(Runtime, StatusCodesMatchTheProgramAbi) {
  // program.h redefined them above without a diagnostic; their values must be what it says.
  EXPECT_EQ(STITCH_OK, 0);
  EXPECT_EQ(STITCH_ERROR_INVALID_ARGUMENT, 1);
  EXPECT_EQ(STITCH_ERROR_CUDA, 2);
  EXPECT_EQ(STITCH_ERROR_LIBRARY, 3);
  EXPECT_EQ(STITCH_ERROR_OUT_OF_MEMORY, 4);
  EXPECT_EQ(STITCH_ERROR_INTERNAL, 5);
}

int fails_cuda(std::string& error) {
  STITCH_CHECK_CUDA(cudaSuccess);
  STITCH_CHECK_CUDA(cudaErrorInvalidValue);
  return STITCH_OK;
}
int fails_allocation(std::string& error) {
  STITCH_CHECK_CUDA(static_cast<int>(cudaErrorMemoryAllocation));
  return STITCH_OK;
}
int fails_cublas(std::string& error) {
  STITCH_CHECK_CUBLAS(CUBLAS_STATUS_SUCCESS);
  STITCH_CHECK_CUBLAS(CUBLAS_STATUS_NOT_SUPPORTED);
  return STITCH_OK;
}
int propagates(std::string& error) {
  STITCH_CHECK(STITCH_OK);
  STITCH_CHECK(fails_cublas(error));
  error = "not reached";
  return STITCH_OK;
}

TEST(Runtime, CheckMacrosSetErrorAndReturnStatus) {
  std::string error;
  EXPECT_EQ(fails_cuda(error), STITCH_ERROR_CUDA);
  EXPECT_NE(error.find("plans_test.cu:"), std::string::npos) << error;
  EXPECT_NE(error.find(": cudaErrorInvalidValue: cudaErrorInvalidValue ("), std::string::npos)
      << error;
  EXPECT_EQ(fails_allocation(error), STITCH_ERROR_OUT_OF_MEMORY);
  EXPECT_NE(error.find("cudaErrorMemoryAllocation"), std::string::npos) << error;
  EXPECT_EQ(fails_cublas(error), STITCH_ERROR_LIBRARY);
  EXPECT_NE(error.find("CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos) << error;
  error.clear();
  EXPECT_EQ(propagates(error), STITCH_ERROR_LIBRARY);
  EXPECT_NE(error.find("CUBLAS_STATUS_NOT_SUPPORTED"), std::string::npos) << error;
}

TEST(Runtime, ArenaArithmetic) {
  EXPECT_EQ(Arena::align(0), 0u);
  EXPECT_EQ(Arena::align(1), 256u);
  EXPECT_EQ(Arena::align(256), 256u);
  EXPECT_EQ(Arena::align(257), 512u);
  ArenaLayout layout;
  EXPECT_EQ(layout.take(10), 0u);
  EXPECT_EQ(layout.take(300), 256u);
  EXPECT_EQ(layout.take(0), 768u);
  EXPECT_EQ(layout.take(1), 768u);
  EXPECT_EQ(layout.total(), 1024u);
  Arena empty;  // nothing reserved: no CUDA call, no pointer
  std::string error;
  EXPECT_EQ(empty.reserve(0, error), STITCH_OK);
  EXPECT_EQ(empty.at(0), nullptr);
  EXPECT_EQ(empty.bytes(), 0u);
}

// ---- elementwise.cuh ----

TEST(Elementwise, FastDividerMatchesDivision) {
  std::mt19937 rng(5);
  const uint32_t divisors[] = {1,  2,    3,     5,     7,        10,          31,       32,
                               33, 1000, 65535, 65536, 1u << 30, 2147483647u, 12345679u};
  for (uint32_t d : divisors) {
    const detail::FastDivider32 divider(d);
    const uint32_t numerators[] = {0u, 1u, d - 1, d, d + 1, 2147483647u, 2147483646u};
    for (uint32_t n : numerators)
      if (n <= 2147483647u) ASSERT_EQ(divider.div(n), n / d) << n << " / " << d;
    for (int i = 0; i < 10000; ++i) {
      const uint32_t n = rng() % 2147483648u;
      ASSERT_EQ(divider.div(n), n / d) << n << " / " << d;
    }
  }
}

TEST(Elementwise, CoalesceMergesContiguousAndDropsUnitDimensions) {
  const int64_t shape[4] = {2, 1, 3, 4};
  const int64_t dense[4] = {12, 12, 4, 1};
  const int64_t bias[4] = {0, 0, 0, 1};  // [4] over the last dimension
  {
    const int64_t* strides[2] = {dense, dense};
    const auto s = detail::coalesce<2>(4, shape, strides);
    ASSERT_EQ(s.rank, 1);
    EXPECT_EQ(s.shape[0], 24);
    EXPECT_EQ(s.strides[0][0], 1);
  }
  {
    const int64_t* strides[2] = {dense, bias};
    const auto s = detail::coalesce<2>(4, shape, strides);
    ASSERT_EQ(s.rank, 2);  // [6, 4]: the bias keeps the last dimension apart
    EXPECT_EQ(s.shape[0], 6);
    EXPECT_EQ(s.shape[1], 4);
    EXPECT_EQ(s.strides[0][0], 4);
    EXPECT_EQ(s.strides[1][0], 0);
    EXPECT_EQ(s.strides[1][1], 1);
  }
  {
    const int64_t t_shape[2] = {3, 5};
    const int64_t t_dense[2] = {5, 1};
    const int64_t transposed[2] = {1, 3};
    const int64_t* strides[2] = {t_dense, transposed};
    EXPECT_EQ(detail::coalesce<2>(2, t_shape, strides).rank, 2);
  }
}

// plan_elementwise never dereferences the pointers: fake addresses decide the alignment.
const void* const kAligned = reinterpret_cast<const void*>(uintptr_t{0x10000});
const void* const kOdd = reinterpret_cast<const void*>(uintptr_t{0x10004});

// The path, with "_wide" appended when the plan uses 64-bit indices.
std::string path_of(const void* const (&data)[2], const int (&dtypes)[2], const int64_t* s0,
                    const int64_t* s1, int rank, const int64_t* shape, bool force_wide = false) {
  const int64_t* strides[2] = {s0, s1};
  detail::ElementwiseOptions options;
  options.force_wide_index = force_wide;
  detail::ElementwisePlan<1, 1> plan;
  EXPECT_EQ((detail::plan_elementwise<1, 1>(data, dtypes, strides, rank, shape, options, plan)),
            cudaSuccess);
  static const char* const kNames[] = {"empty", "vector4", "strided32", "strided64"};
  std::string name = kNames[static_cast<int>(plan.path)];
  if (plan.path == detail::ElementwisePath::vector4 && plan.wide_index) name += "_wide";
  return name;
}

TEST(Elementwise, PlanPicksThePath) {
  const int f32[2] = {kDtypeFloat32, kDtypeFloat32};
  const void* const aligned[2] = {kAligned, kAligned};
  const void* const odd_input[2] = {kOdd, kAligned};
  const int64_t shape[2] = {8, 12};
  const int64_t dense[2] = {12, 1};
  const int64_t per_column[2] = {0, 1};
  const int64_t per_row[2] = {1, 0};
  const int64_t transposed[2] = {1, 8};
  EXPECT_EQ(path_of(aligned, f32, dense, dense, 2, shape), "vector4");
  EXPECT_EQ(path_of(aligned, f32, per_column, dense, 2, shape), "vector4");
  EXPECT_EQ(path_of(aligned, f32, per_row, dense, 2, shape), "vector4");
  EXPECT_EQ(path_of(odd_input, f32, dense, dense, 2, shape), "strided32");
  EXPECT_EQ(path_of(aligned, f32, transposed, dense, 2, shape), "strided32");
  EXPECT_EQ(path_of(aligned, f32, dense, dense, 2, shape, true), "vector4_wide");
  EXPECT_EQ(path_of(aligned, f32, transposed, dense, 2, shape, true), "strided64");
  const int64_t odd_shape[2] = {8, 13};
  const int64_t odd_dense[2] = {13, 1};
  const int64_t odd_bias[2] = {0, 1};
  EXPECT_EQ(path_of(aligned, f32, odd_dense, odd_dense, 2, odd_shape), "vector4");  // one run
  EXPECT_EQ(path_of(aligned, f32, odd_bias, odd_dense, 2, odd_shape), "strided32");
  const int i64_f32[2] = {kDtypeInt64, kDtypeFloat32};
  EXPECT_EQ(path_of(aligned, i64_f32, dense, dense, 2, shape), "strided32");
  EXPECT_EQ(path_of(aligned, i64_f32, per_row, dense, 2, shape), "vector4");
  // More than 2^31 elements, or offsets past 2^31: 64-bit indices.
  const int u8[2] = {kDtypeUInt8, kDtypeUInt8};
  const int64_t big[1] = {int64_t{1} << 32};
  const int64_t unit[1] = {1};
  EXPECT_EQ(path_of(aligned, u8, unit, unit, 1, big), "strided64");
  EXPECT_EQ(path_of(aligned, f32, unit, unit, 1, big), "vector4_wide");
  const int64_t far_shape[2] = {2, 3};
  const int64_t far[2] = {int64_t{1} << 31, 1};
  const int64_t near[2] = {3, 1};
  EXPECT_EQ(path_of(aligned, u8, far, near, 2, far_shape), "strided64");
  // Three dimensions: [N, C, H·W] with a per-channel operand reads it per row; an operand per N
  // and per column has no float4 read.
  const int64_t nchw[3] = {4, 6, 12};
  const int64_t nchw_dense[3] = {72, 12, 1};
  const int64_t per_channel[3] = {0, 1, 0};
  const int64_t per_n_and_column[3] = {12, 0, 1};
  EXPECT_EQ(path_of(aligned, f32, per_channel, nchw_dense, 3, nchw), "vector4");
  EXPECT_EQ(path_of(aligned, f32, nchw_dense, nchw_dense, 3, nchw), "vector4");
  EXPECT_EQ(path_of(aligned, f32, per_n_and_column, nchw_dense, 3, nchw), "strided32");
  const int64_t nchw_odd[3] = {4, 6, 13};
  const int64_t nchw_odd_dense[3] = {78, 13, 1};
  EXPECT_EQ(path_of(aligned, f32, per_channel, nchw_odd_dense, 3, nchw_odd), "strided32");
  const int64_t empty_shape[2] = {0, 3};
  EXPECT_EQ(path_of(aligned, f32, dense, dense, 2, empty_shape), "empty");
}

TEST(Elementwise, PlanRejectsBadOperands) {
  const void* const aligned[2] = {kAligned, kAligned};
  const void* const null_input[2] = {nullptr, kAligned};
  const int f32[2] = {kDtypeFloat32, kDtypeFloat32};
  const int f16[2] = {2, kDtypeFloat32};
  const int64_t shape[2] = {4, 4};
  const int64_t dense[2] = {4, 1};
  const int64_t repeated[2] = {0, 1};
  const int64_t negative[2] = {-1, 4};
  const int64_t huge[2] = {int64_t{1} << 40, int64_t{1} << 40};
  detail::ElementwisePlan<1, 1> plan;
  const detail::ElementwiseOptions options;
  auto plan_for = [&](const void* const(&data)[2], const int(&dtypes)[2], const int64_t* in,
                      const int64_t* out, int rank, const int64_t* dims) {
    const int64_t* strides[2] = {in, out};
    return detail::plan_elementwise<1, 1>(data, dtypes, strides, rank, dims, options, plan);
  };
  EXPECT_EQ(plan_for(aligned, f32, dense, repeated, 2, shape), cudaErrorInvalidValue);
  EXPECT_EQ(plan_for(aligned, f16, dense, dense, 2, shape), cudaErrorInvalidValue);
  EXPECT_EQ(plan_for(null_input, f32, dense, dense, 2, shape), cudaErrorInvalidValue);
  EXPECT_EQ(plan_for(aligned, f32, dense, dense, 2, negative), cudaErrorInvalidValue);
  EXPECT_EQ(plan_for(aligned, f32, dense, dense, 2, huge), cudaErrorInvalidValue);  // overflow
  EXPECT_EQ(plan_for(aligned, f32, dense, dense, kMaxRank + 1, shape), cudaErrorInvalidValue);
  EXPECT_EQ(plan_for(aligned, f32, dense, repeated, 2, shape), cudaErrorInvalidValue);
}

// ---- scalar_ops.cuh ----

// op_mish's one-exponential form against x · tanh(log1p(exp(x))) in double: within a few float
// ulps of the value (or 1e-30 absolute where it underflows toward zero) from -100 to 100, x
// itself past the threshold, NaN for NaN and -inf (as PyTorch's -inf · 0), inf for inf.
TEST(ScalarOps, MishTakesOneExponential) {
  double worst = 0;
  for (double x = -100.0; x <= 100.0; x += 0.0137) {
    const float xf = static_cast<float>(x);
    const double xd = xf;
    const double want = xd * std::tanh(std::log1p(std::exp(xd)));
    const double got = op_mish(xf);
    const double error = std::abs(got - want) / std::max(std::abs(want), 1e-30);
    worst = std::max(worst, std::abs(want) < 1e-30 ? 0.0 : error);
    ASSERT_LE(std::abs(got - want), 4e-7 * std::abs(want) + 1e-30) << "x = " << xf;
  }
  std::printf("[ scalar_ops ] op_mish: worst relative error %.3g\n", worst);
  EXPECT_EQ(op_mish(25.0f), 25.0f);
  EXPECT_EQ(op_mish(20.5f), 20.5f);
  EXPECT_TRUE(std::isnan(op_mish(std::nanf(""))));
  EXPECT_TRUE(std::isnan(op_mish(-INFINITY)));
  EXPECT_EQ(op_mish(INFINITY), INFINITY);
  EXPECT_EQ(op_mish(0.0f), 0.0f);
}

// ---- reduction.cuh ----

TEST(Reduction, PlanPicksTheStrategy) {
  using S = detail::ReduceStrategy;
  struct Expect {
    int64_t outer, reduce, inner;
    S strategy;
    int64_t splits;
    int block_x, block_y;
  };
  const Expect expectations[] = {
      {7, 5, 1, S::row_per_thread, 1, 256, 1},
      {4816896, 4, 1, S::row_per_thread, 1, 256, 1},
      {7, 17, 1, S::row_per_warp, 1, 256, 1},
      {33, 1024, 1, S::row_per_warp, 1, 256, 1},
      {5, 1025, 1, S::row_per_block, 1, 256, 1},
      // Fewer rows than kSplitBelowBlocks: split, as far as 8192 elements a split allow.
      {600, 30000, 1, S::row_per_block, 3, 512, 1},
      // A BatchNorm's statistics over 672 channels: 7 splits, 4704 blocks (not 1.27 waves).
      {672, 501760, 1, S::row_per_block, 7, 512, 1},
      {1024, 501760, 1, S::row_per_block, 1, 512, 1},
      {3, 1048579, 1, S::row_per_block, 128, 512, 1},
      {1, 5000000, 1, S::row_per_block, 610, 512, 1},
      {4, 33, 3, S::columns, 1, 4, 64},
      {2, 3, 64, S::columns, 1, 32, 4},
      {1, 100000, 5, S::columns, 390, 8, 32},
      {64, 17, 1000, S::columns, 1, 32, 8},
  };
  for (const Expect& e : expectations) {
    const detail::ReducePlan plan = detail::plan_reduce(e.outer, e.reduce, e.inner);
    SCOPED_TRACE(std::to_string(e.outer) + "x" + std::to_string(e.reduce) + "x" +
                 std::to_string(e.inner));
    EXPECT_EQ(plan.strategy, e.strategy);
    EXPECT_EQ(plan.splits, e.splits);
    EXPECT_EQ(plan.block_x, e.block_x);
    EXPECT_EQ(plan.block_y, e.block_y);
    // Every reduce index belongs to exactly one split.
    EXPECT_GE(plan.chunk * plan.splits, e.reduce);
    EXPECT_LT(plan.chunk * (plan.splits - 1), e.reduce == 0 ? 1 : e.reduce);
    const size_t bytes = reduce_workspace_bytes(e.outer, e.reduce, e.inner);
    EXPECT_EQ(bytes, e.splits > 1 ? static_cast<size_t>(e.splits * e.outer * e.inner * 16) : 0u);
  }
  EXPECT_EQ(reduce_workspace_bytes(-1, 5, 1), 0u);
}

// ---- row.cuh ----

TEST(Row, PlanPicksTheStrategy) {
  using S = detail::RowStrategy;
  struct Expect {
    int64_t cols;
    S strategy;
    int per_thread;
  };
  const Expect expectations[] = {{1, S::warp, 1},     {32, S::warp, 1},     {33, S::warp, 2},
                                 {1000, S::warp, 32}, {1024, S::warp, 32},  {1025, S::block, 4},
                                 {2048, S::block, 4}, {2049, S::block, 8},  {8192, S::block, 16},
                                 {8193, S::loop, 0},  {1 << 20, S::loop, 0}};
  for (const Expect& e : expectations) {
    const detail::RowPlan plan = detail::plan_row(e.cols);
    EXPECT_EQ(plan.strategy, e.strategy) << e.cols;
    EXPECT_EQ(plan.per_thread, e.per_thread) << e.cols;
    if (plan.strategy != S::loop)
      EXPECT_GE(int64_t{plan.per_thread} * (plan.strategy == S::warp ? 32 : plan.threads), e.cols);
  }
}

// ---- pooling.cuh ----

// A 2-d pool over [outer, h, w] planes in NCDHW order, its output sizes without ceil mode.
PoolShape pool_2d(int64_t outer, int64_t h, int64_t w, int64_t kernel, int64_t stride, int64_t pad,
                  int64_t dilation = 1) {
  PoolShape s;
  s.outer = outer;
  const int64_t in[3] = {1, h, w};
  for (int dim = 1; dim < 3; ++dim) {
    s.in[dim] = in[dim];
    s.kernel[dim] = kernel;
    s.stride[dim] = stride;
    s.pad[dim] = pad;
    s.dilation[dim] = dilation;
    s.out[dim] = (in[dim] + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1;
  }
  return s;
}

TEST(Pooling, TilePlanTakesSmallWindowsOverNcdhwPlanes) {
  // GoogleNet's inception pool: 3x3 stride 1 pad 1 over [10, 480, 224, 224]: 14 x 7 tiles of
  // 16 x 32 outputs, each from an 18 x 34 region.
  const detail::PoolTilePlan googlenet =
      detail::plan_pool_tile(PoolKind::max, pool_2d(10 * 480, 224, 224, 3, 1, 1));
  EXPECT_TRUE(googlenet.eligible);
  EXPECT_EQ(googlenet.rows, 18);
  EXPECT_EQ(googlenet.cols, 34);
  EXPECT_EQ(googlenet.tiles_h, 14);
  EXPECT_EQ(googlenet.tiles_w, 7);

  // Stride 2 and dilation 2 (max): rows 15·2 + 2·2 + 1, cols 31·2 + 2·2 + 1; ragged tiles.
  const detail::PoolTilePlan dilated =
      detail::plan_pool_tile(PoolKind::max, pool_2d(2, 41, 75, 3, 2, 1, 2));
  EXPECT_TRUE(dilated.eligible);
  EXPECT_EQ(dilated.rows, 35);
  EXPECT_EQ(dilated.cols, 67);
  EXPECT_EQ(dilated.tiles_h, 2);  // 19 output rows
  EXPECT_EQ(dilated.tiles_w, 2);  // 36 output columns

  // Average pools ignore dilation (pool_window's avg windows are dense), so the region does too.
  PoolShape avg = pool_2d(3, 35, 67, 3, 2, 1);
  avg.dilation[1] = avg.dilation[2] = 4;
  const detail::PoolTilePlan avg_plan = detail::plan_pool_tile(PoolKind::avg, avg);
  EXPECT_TRUE(avg_plan.eligible);
  EXPECT_EQ(avg_plan.rows, 33);
  EXPECT_EQ(avg_plan.cols, 65);
}

TEST(Pooling, TilePlanLeavesTheRestToThePerElementKernel) {
  auto eligible = [](PoolKind kind, const PoolShape& s) {
    return detail::plan_pool_tile(kind, s).eligible;
  };
  const PoolShape googlenet = pool_2d(10 * 480, 224, 224, 3, 1, 1);
  // A 7x7 stride-7 window: a 112 x 224 region, past the 8192-cell budget.
  EXPECT_FALSE(eligible(PoolKind::max, pool_2d(10 * 64, 224, 224, 7, 7, 0)));
  // Windows not a fixed stride apart, and resampling.
  EXPECT_FALSE(eligible(PoolKind::adaptive_max, googlenet));
  EXPECT_FALSE(eligible(PoolKind::adaptive_avg, googlenet));
  EXPECT_FALSE(eligible(PoolKind::nearest, googlenet));
  EXPECT_FALSE(eligible(PoolKind::bilinear, googlenet));
  // Channels-last: the outputs go channels fastest, and loads along w are not contiguous.
  PoolShape channels_last = googlenet;
  channels_last.channels = 480;
  EXPECT_FALSE(eligible(PoolKind::max, channels_last));
  // A 3-d pool.
  PoolShape volume = googlenet;
  volume.in[0] = volume.out[0] = 4;
  EXPECT_FALSE(eligible(PoolKind::avg, volume));
  // A 1-d pool (one output row) and planes too small to fill a tile's rows or warps.
  EXPECT_FALSE(eligible(PoolKind::max, pool_2d(8, 1, 1000, 3, 1, 1)));
  EXPECT_FALSE(eligible(PoolKind::max, pool_2d(8, 3, 100, 3, 1, 1)));
  EXPECT_FALSE(eligible(PoolKind::max, pool_2d(8, 100, 7, 3, 1, 1)));
  EXPECT_TRUE(eligible(PoolKind::max, pool_2d(8, 4, 8, 3, 1, 1)));
}

// ---- matmul.cuh ----

TEST(Matmul, RowMajorMapsToTransposedColumnMajor) {
  MatmulShape s;
  s.batch = 3;
  s.m = 5;
  s.n = 7;
  s.k = 9;
  s.lda = 10;
  s.ldb = 8;
  s.ldc = 7;
  s.stride_a = 50;
  s.stride_b = 0;
  s.stride_c = 35;
  detail::LtProblem p;
  ASSERT_EQ(detail::lt_problem(s, p), "");
  // cuBLASLt's A is our B ([k, n] row-major = [n, k] column-major), its B our A.
  EXPECT_EQ(p.op_a, CUBLAS_OP_N);
  EXPECT_EQ(p.a_rows, 7u);
  EXPECT_EQ(p.a_cols, 9u);
  EXPECT_EQ(p.lda, 8);
  EXPECT_EQ(p.op_b, CUBLAS_OP_N);
  EXPECT_EQ(p.b_rows, 9u);
  EXPECT_EQ(p.b_cols, 5u);
  EXPECT_EQ(p.ldb, 10);
  EXPECT_EQ(p.c_rows, 7u);
  EXPECT_EQ(p.c_cols, 5u);
  EXPECT_EQ(p.stride_a, 0);
  EXPECT_EQ(p.stride_b, 50);
  s.trans_a = s.trans_b = true;
  s.lda = 5;  // A stored [k, m]
  s.ldb = 9;  // B stored [n, k]
  ASSERT_EQ(detail::lt_problem(s, p), "");
  EXPECT_EQ(p.op_a, CUBLAS_OP_T);
  EXPECT_EQ(p.a_rows, 9u);
  EXPECT_EQ(p.a_cols, 7u);
  EXPECT_EQ(p.op_b, CUBLAS_OP_T);
  EXPECT_EQ(p.b_rows, 5u);
  EXPECT_EQ(p.b_cols, 9u);
  s.ldb = 8;
  EXPECT_NE(detail::lt_problem(s, p), "");  // ldb < k
  s.ldb = 9;
  s.stride_c = 0;
  EXPECT_NE(detail::lt_problem(s, p), "");  // overlapping batched outputs
  EXPECT_EQ(detail::alignment_of(0, 16), 16u);
  EXPECT_EQ(detail::alignment_of(200, 16), 8u);
  EXPECT_EQ(detail::alignment_of(36, 256), 4u);
}

TEST(Matmul, SharedWeightsBatchFoldsIntoOneGemm) {
  MatmulShape s;
  s.batch = 4;
  s.m = 16;
  s.n = 24;
  s.k = 32;
  s.lda = 32;
  s.ldb = 24;
  s.ldc = 24;
  s.stride_a = 16 * 32;
  s.stride_b = 0;
  s.stride_c = 16 * 24;
  const MatmulShape folded = detail::fold_shared_b(s);
  EXPECT_EQ(folded.batch, 1);
  EXPECT_EQ(folded.m, 64);
  s.stride_a += 1;  // gaps between the batches of A: stays batched
  EXPECT_EQ(detail::fold_shared_b(s).batch, 4);
  s.stride_a -= 1;
  s.trans_a = true;
  EXPECT_EQ(detail::fold_shared_b(s).batch, 4);
}

// ---- matmul_tf32x3.cuh ----

TEST(Tf32x3, LinearLayerSplitsAlongK) {
  // y = x·Wᵀ: x [m, k] row-major, W [n, k] stored (trans_b), shared by a batch of 2.
  MatmulShape s;
  s.batch = 2;
  s.m = 5;
  s.n = 7;
  s.k = 11;
  s.lda = 11;
  s.ldb = 11;
  s.ldc = 7;
  s.stride_a = 5 * 11;
  s.stride_b = 0;
  s.stride_c = 5 * 7;
  s.trans_b = true;
  const detail::Tf32x3Problem p = detail::tf32x3_problem(s);
  // A: K along its columns, three copies per row [big | big | small], one per batch.
  EXPECT_TRUE(p.a.k_along_cols);
  EXPECT_EQ(p.a.small_in, 2);
  EXPECT_EQ(p.a.rows, 5);
  EXPECT_EQ(p.a.cols, 11);
  EXPECT_EQ(p.a.out_batches(), 2);
  // W: stored [n, k], K along its columns too: [big | small | big], one copy for the batch.
  EXPECT_TRUE(p.b.k_along_cols);
  EXPECT_EQ(p.b.small_in, 1);
  EXPECT_EQ(p.b.rows, 7);
  EXPECT_EQ(p.b.out_batches(), 1);
  // The TF32 GEMM: k' = 3 segments of k rounded up to 4 (16-byte rows), on the contiguous split
  // copies; batches still back to back, so it folds.
  EXPECT_EQ(p.a.segment, 12);
  EXPECT_EQ(p.split.k, 36);
  EXPECT_EQ(p.split.lda, 36);
  EXPECT_EQ(p.split.ldb, 36);
  EXPECT_EQ(p.split.stride_a, 5 * 36);
  EXPECT_EQ(p.split.stride_b, 0);
  EXPECT_EQ(p.split.ldc, 7);
  detail::LtProblem lt;
  EXPECT_EQ(detail::lt_problem(p.split, lt), "");
  EXPECT_EQ(detail::fold_shared_b(p.split).batch, 1);
}

TEST(Tf32x3, TransposedOperandsStackAlongRows) {
  MatmulShape s;
  s.m = 4;
  s.n = 6;
  s.k = 9;
  s.trans_a = true;  // A stored [k, m]: K runs down its rows
  s.lda = 4 + 2;     // padded
  s.ldb = 6;         // B [k, n]: K runs down its rows
  s.ldc = 6;
  const detail::Tf32x3Problem p = detail::tf32x3_problem(s);
  EXPECT_FALSE(p.a.k_along_cols);
  EXPECT_EQ(p.a.rows, 9);
  EXPECT_EQ(p.a.cols, 4);
  EXPECT_EQ(p.a.ld, 6) << "the source keeps its padding; the copy is dense";
  EXPECT_FALSE(p.b.k_along_cols);
  EXPECT_EQ(p.split.lda, 4);   // [3 segment, m] stored
  EXPECT_EQ(p.split.ldb, 6);   // [3 segment, n]
  EXPECT_EQ(p.split.k, 36);    // segment = 12
  detail::LtProblem lt;
  EXPECT_EQ(detail::lt_problem(p.split, lt), "");
}

// The split layout end to end on the host: build A3 and B3 as the split kernel would (with any
// values for "big" and "small"), multiply them with MatmulShape's row-major semantics (what
// LtMatmul computes, checked on the GPU by matmul_test.cu), and expect
// big_a·big_b + big_a·small_b + small_a·big_b of the original operands.
namespace tf32x3_host {

double big(double x) { return x; }
double small(double x) { return 0.25 * x * x + 0.125; }  // anything distinct from big

// C = A·B for a row-major MatmulShape (batches, transposes, leading dimensions, stride 0).
std::vector<double> matmul(const MatmulShape& s, const std::vector<double>& a,
                           const std::vector<double>& b, double (*fa)(double) = nullptr,
                           double (*fb)(double) = nullptr) {
  std::vector<double> c(static_cast<size_t>(s.batch * s.m * s.n), 0.0);
  for (int64_t t = 0; t < s.batch; ++t)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < s.k; ++q) {
          double x = a[t * s.stride_a + (s.trans_a ? q * s.lda + i : i * s.lda + q)];
          double y = b[t * s.stride_b + (s.trans_b ? j * s.ldb + q : q * s.ldb + j)];
          sum += (fa ? fa(x) : x) * (fb ? fb(y) : y);
        }
        c[(t * s.m + i) * s.n + j] = sum;
      }
  return c;
}

std::vector<double> split(const std::vector<double>& x, const detail::SplitLayout& l) {
  // Zero, as init leaves the device buffer: the K padding of every copy.
  std::vector<double> out(static_cast<size_t>(l.out_batch_elems() * l.out_batches()), 0.0);
  for (int64_t t = 0; t < l.out_batches(); ++t)
    for (int64_t r = 0; r < l.rows; ++r)
      for (int64_t c = 0; c < l.cols; ++c) {
        const double v = x[t * l.stride + r * l.ld + c];
        for (int copy = 0; copy < 3; ++copy)
          out[detail::split_offset(l, t, r, c, copy)] = copy == l.small_in ? small(v) : big(v);
      }
  return out;
}

}  // namespace tf32x3_host

TEST(Tf32x3, SplitCopiesMultiplyToTheThreeProducts) {
  struct Case {
    const char* name;
    int64_t batch, m, n, k;
    bool trans_a, trans_b;
    int64_t pad;
    bool broadcast_a, broadcast_b;
  };
  const Case cases[] = {
      {"plain", 1, 5, 7, 3, false, false, 0, false, false},
      {"trans_a", 1, 4, 6, 5, true, false, 0, false, false},
      {"trans_b", 1, 4, 6, 5, false, true, 0, false, false},
      {"trans_both_padded", 1, 3, 4, 6, true, true, 2, false, false},
      {"batched", 3, 4, 5, 6, false, false, 1, false, false},
      {"shared_weight_linear", 3, 4, 5, 6, false, true, 0, false, true},
      {"broadcast_a_trans_a", 2, 4, 5, 3, true, false, 0, true, false},
      {"long_k", 1, 3, 4, 37, false, false, 0, false, false},
      {"long_k_trans_both_batched", 2, 3, 4, 29, true, true, 1, false, false},
      {"long_k_shared_weight_linear", 3, 2, 5, 23, false, true, 0, false, true},
  };
  // Each case as one run (the default limit) and in chunks (a limit of 16: several chunks).
  for (int64_t max_run : {detail::kMaxTensorCoreRun, int64_t{16}})
  for (const Case& c : cases) {
    MatmulShape s;
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
    s.ldc = c.n;
    s.stride_a = c.broadcast_a ? 0 : a_rows * s.lda;
    s.stride_b = c.broadcast_b ? 0 : b_rows * s.ldb;
    s.stride_c = c.m * c.n;
    std::vector<double> a(static_cast<size_t>((c.broadcast_a ? 1 : c.batch) * a_rows * s.lda));
    std::vector<double> b(static_cast<size_t>((c.broadcast_b ? 1 : c.batch) * b_rows * s.ldb));
    for (size_t i = 0; i < a.size(); ++i) a[i] = 0.5 + static_cast<double>(i % 7) - 0.3 * (i % 3);
    for (size_t i = 0; i < b.size(); ++i) b[i] = -1.0 + static_cast<double>(i % 5) * 0.75;

    const detail::Tf32x3Problem p = detail::tf32x3_problem(s, max_run);
    detail::LtProblem lt;
    ASSERT_EQ(detail::lt_problem(p.split, lt), "") << c.name;
    EXPECT_EQ(p.chunks > 1, 3 * p.a.segment > max_run) << c.name;
    EXPECT_EQ(p.chunks * p.split.k, p.a.k_extent) << c.name;
    if (p.chunks > 1) EXPECT_EQ(p.split.k % 32, 0) << c.name << ": chunk starts stay aligned";
    // Chunk by chunk, as run() does: each chunk's operands start a chunk step further in.
    const std::vector<double> a3 = tf32x3_host::split(a, p.a), b3 = tf32x3_host::split(b, p.b);
    std::vector<double> got;
    for (int64_t chunk = 0; chunk < p.chunks; ++chunk) {
      const std::vector<double> part = tf32x3_host::matmul(
          p.split, std::vector<double>(a3.begin() + chunk * p.a_chunk_step, a3.end()),
          std::vector<double>(b3.begin() + chunk * p.b_chunk_step, b3.end()));
      if (got.empty()) got.assign(part.size(), 0.0);
      for (size_t i = 0; i < part.size(); ++i) got[i] += part[i];
    }
    using tf32x3_host::big;
    using tf32x3_host::small;
    const std::vector<double> bb = tf32x3_host::matmul(s, a, b, big, big);
    const std::vector<double> bs = tf32x3_host::matmul(s, a, b, big, small);
    const std::vector<double> sb = tf32x3_host::matmul(s, a, b, small, big);
    ASSERT_EQ(got.size(), bb.size()) << c.name;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], bb[i] + bs[i] + sb[i], 1e-9 * (1 + std::fabs(got[i])))
          << c.name << " element " << i;
  }
}

// ---- program_support.cuh ----

TEST(ProgramSupport, CheckTensorWantsDtypeShapeAndContiguity) {
  float storage[6];
  const TensorSpec want{STITCH_FLOAT32, 2, {2, 3}};
  stitch_tensor t{};
  t.data = storage;
  t.dtype = STITCH_FLOAT32;
  t.rank = 2;
  t.shape[0] = 2;
  t.shape[1] = 3;
  t.strides[0] = 3;
  t.strides[1] = 1;
  std::string error;
  EXPECT_EQ(check_tensor(t, want, "input", 0, error), STITCH_OK) << error;
  stitch_tensor transposed = t;
  transposed.strides[0] = 1;
  transposed.strides[1] = 2;
  EXPECT_EQ(check_tensor(transposed, want, "input", 1, error), STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error.rfind("input 1: ", 0), 0u) << error;
  stitch_tensor wrong_shape = t;
  wrong_shape.shape[1] = 4;
  EXPECT_EQ(check_tensor(wrong_shape, want, "output", 0, error), STITCH_ERROR_INVALID_ARGUMENT);
  stitch_tensor wrong_dtype = t;
  wrong_dtype.dtype = STITCH_FLOAT16;
  EXPECT_EQ(check_tensor(wrong_dtype, want, "param", 2, error), STITCH_ERROR_INVALID_ARGUMENT);
  stitch_tensor null_data = t;
  null_data.data = nullptr;
  EXPECT_EQ(check_tensor(null_data, want, "param", 3, error), STITCH_ERROR_INVALID_ARGUMENT);
  // A size-1 dim may have any stride (a broadcast view of it is still the same data).
  const TensorSpec row{STITCH_FLOAT32, 2, {1, 3}};
  stitch_tensor one_row = t;
  one_row.shape[0] = 1;
  one_row.strides[0] = 12345;
  EXPECT_EQ(check_tensor(one_row, row, "input", 0, error), STITCH_OK) << error;
}

TEST(Matmul, InitRejectsBadArgumentsBeforeTouchingCublas) {
  MatmulShape s;
  s.m = 4;
  s.n = 4;
  s.k = 0;
  s.lda = s.ldb = s.ldc = 4;
  std::string error;
  LtMatmul mm;
  EXPECT_EQ(mm.init(nullptr, s, MatmulEpilogue::none, false, nullptr, 0, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("k == 0"), std::string::npos) << error;
  s.k = 4;
  EXPECT_EQ(mm.init(nullptr, s, MatmulEpilogue::none, false, nullptr, 0, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("handle"), std::string::npos) << error;
  EXPECT_EQ(mm.init(nullptr, s, MatmulEpilogue::none, false, nullptr, 0, error, 3),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mm.run(nullptr, nullptr, nullptr, nullptr, nullptr, 1.0f, 0.0f, nullptr, error),
            STITCH_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(mm.describe(), "not initialised");
  EXPECT_FALSE(epilogue_matches_exact_gelu);
}

// GemmTf32x3's cut (kernels/gemm_tf32x3.cuh): 128 x 128 tiles; K split across blocks only when
// the tiles leave SMs idle and K is long enough, every split non-empty.
TEST(GemmTf32x3, PlanSplitsKOnlyWhenTilesAreFew) {
  const detail::GemmTf32x3Plan level2 = detail::plan_gemm_tf32x3(1, 1024, 8192, 8192, 132);
  EXPECT_EQ(level2.tiles_m, 8);
  EXPECT_EQ(level2.tiles_n, 64);
  EXPECT_EQ(level2.splits, 1);
  EXPECT_EQ(level2.partial_floats(), 0);
  EXPECT_EQ(detail::plan_gemm_tf32x3(1, 128, 16384, 16384, 132).splits, 1);  // 128 tiles: 1 wave
  const detail::GemmTf32x3Plan few = detail::plan_gemm_tf32x3(1, 64, 256, 4096, 132);
  EXPECT_EQ(few.tiles, 2);
  EXPECT_EQ(few.splits, 8);
  EXPECT_EQ(few.split_k, 512);
  EXPECT_EQ(few.partial_floats(), 2 * 8 * 64 * 256);
  const detail::GemmTf32x3Plan odd = detail::plan_gemm_tf32x3(2, 100, 130, 1000, 132);
  EXPECT_GT(odd.splits, 1);
  EXPECT_EQ(odd.split_k % detail::kGemmBK, 0);
  EXPECT_LT(int64_t{odd.split_k} * (odd.splits - 1), 1000);  // the last split is not empty
  EXPECT_GE(int64_t{odd.split_k} * odd.splits, 1000);
  EXPECT_EQ(detail::plan_gemm_tf32x3(1, 64, 64, 200, 132).splits, 1);  // K too short to split
}

// The wgmma kernel's split copies of B (kernels/gemm_tf32x3_wgmma.cuh): inside each block of 32,
// K step kk's slot s holds column 8s + 2kk and slot s + 4 column 8s + 2kk + 1 — the order the
// consumers read A in (load_a_fragments) — and the blocks follow one another.
TEST(GemmTf32x3, WgmmaSplitLayoutMatchesTheAFragmentOrder) {
  for (int64_t block = 0; block < 3; ++block)
    for (int kk = 0; kk < 4; ++kk)
      for (int s = 0; s < 4; ++s) {
        const int64_t base = 32 * block;
        EXPECT_EQ(detail::wgmma_split_column(base + 8 * kk + s), base + 8 * s + 2 * kk);
        EXPECT_EQ(detail::wgmma_split_column(base + 8 * kk + 4 + s), base + 8 * s + 2 * kk + 1);
      }
}

}  // namespace
}  // namespace stitch::kernels
