// kernels/scan.cuh on a GPU against a double-precision CPU reference: sums and products, inclusive
// and exclusive, forward and reverse, along the innermost axis (warp_rows: short rows, rows that
// end mid-step, long rows of 32768 as KernelBench's) and a middle one (columns), a strided
// (flipped) input read through negative strides, NaN and infinities carried along, and identical
// bits on a rerun. Skips without a CUDA device.
//
// Tolerance: the sum's error bound is that of FP32 additions in any order, |err| <= atol +
// mtol · sum_{q <= p} |x_q| with mtol = 4e-6 (about 2⁻²⁴ times the tree depth plus the carries
// of a 32768 row, and well under the fp32 track's 1e-4); products 8·sqrt(n)·2⁻²⁴ relative.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/scan.cuh"

namespace stitch::kernels {
namespace {

using testing::DeviceBuffer;
using testing::Tolerance;

// Element (o, p, i) of a contiguous [outer, length, inner] buffer, or of its flip along the axis
// (a negative stride from the last position) when `flipped`.
struct ScanLoad {
  const float* x;
  int64_t length, inner;
  bool flipped;
  __device__ float operator()(int64_t o, int64_t p, int64_t i) const {
    const int64_t q = flipped ? length - 1 - p : p;
    return x[(o * length + q) * inner + i];
  }
};
struct ScanStore {
  float* y;
  int64_t length, inner;
  __device__ void operator()(int64_t o, int64_t p, int64_t i, float v) const {
    y[(o * length + p) * inner + i] = v;
  }
};

struct ScanCase {
  std::string name;
  ScanKind kind;
  int64_t outer, length, inner;
  bool reverse = false, exclusive = false, flipped = false, specials = false;
};

ScanStrategy strategy_of(const ScanCase& c) {
  return c.inner == 1 ? ScanStrategy::warp_rows : ScanStrategy::columns;
}

std::vector<float> inputs_for(const ScanCase& c) {
  const size_t n = static_cast<size_t>(c.outer * c.length * c.inner);
  // Products stay near 1 so long rows neither vanish nor overflow; sums take signed values.
  std::vector<float> x = c.kind == ScanKind::prod ? testing::uniform_floats(n, 7, 0.9f, 1.1f)
                                                  : testing::uniform_floats(n, 7, -1.0f, 1.0f);
  if (c.specials && n > 40) {
    x[5] = NAN;
    x[n - 30] = INFINITY;
  }
  return x;
}

// The reference and, per element, sum |x| over the elements scanned into it (the sum's scale).
void reference(const ScanCase& c, const std::vector<float>& x, std::vector<double>& expected,
               std::vector<double>& scale) {
  expected.assign(x.size(), 0.0);
  scale.assign(x.size(), 0.0);
  for (int64_t o = 0; o < c.outer; ++o)
    for (int64_t i = 0; i < c.inner; ++i) {
      double acc = c.kind == ScanKind::sum ? 0.0 : 1.0, magnitude = 0.0;
      for (int64_t t = 0; t < c.length; ++t) {
        const int64_t p = c.reverse ? c.length - 1 - t : t;
        const int64_t q = c.flipped ? c.length - 1 - p : p;
        const double v = x[(o * c.length + q) * c.inner + i];
        const double before = acc;
        acc = c.kind == ScanKind::sum ? acc + v : acc * v;
        magnitude += std::fabs(v);
        const int64_t at = (o * c.length + p) * c.inner + i;
        expected[at] = c.exclusive ? before : acc;
        scale[at] = magnitude;
      }
    }
}

class ScanTest : public ::testing::TestWithParam<ScanCase> {};

TEST_P(ScanTest, MatchesDoubleReference) {
  REQUIRE_GPU();
  const ScanCase& c = GetParam();
  const std::vector<float> x = inputs_for(c);
  DeviceBuffer<float> in(x.size()), out(x.size());
  ASSERT_CUDA(in.upload(x));
  const ScanLoad load{in.data(), c.length, c.inner, c.flipped};
  const ScanStore store{out.data(), c.length, c.inner};
  auto run = [&]() -> cudaError_t {
    return c.kind == ScanKind::sum
               ? launch_scan<ScanKind::sum>(strategy_of(c), c.outer, c.length, c.inner, c.reverse,
                                            c.exclusive, load, store, nullptr)
               : launch_scan<ScanKind::prod>(strategy_of(c), c.outer, c.length, c.inner,
                                             c.reverse, c.exclusive, load, store, nullptr);
  };
  ASSERT_CUDA(run());
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> first = out.download();
  std::vector<double> expected, scale;
  reference(c, x, expected, scale);
  if (c.kind == ScanKind::sum) {
    EXPECT_TRUE(testing::all_close(first, expected, Tolerance{1e-6, 0.0, 4e-6}, &scale));
  } else {
    const double rel = 8.0 * std::sqrt(static_cast<double>(c.length)) * std::ldexp(1.0, -24);
    EXPECT_TRUE(testing::all_close(first, expected, Tolerance{1e-30, rel, 0.0}));
  }
  ASSERT_CUDA(run());
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(testing::bitwise_equal(out.download(), first)) << "a rerun changed the bits";
}

// stitch: table
INSTANTIATE_TEST_SUITE_P(
    Scans, ScanTest,
    ::testing::Values(
        ScanCase{"sum_rows_short", ScanKind::sum, 37, 5, 1},
        ScanCase{"sum_rows_mid_step", ScanKind::sum, 9, 333, 1},
        ScanCase{"sum_rows_long", ScanKind::sum, 64, 32768, 1},
        ScanCase{"sum_one_long_row", ScanKind::sum, 1, 1 << 20, 1},
        ScanCase{"sum_rows_reverse", ScanKind::sum, 17, 1000, 1, true},
        ScanCase{"sum_rows_exclusive", ScanKind::sum, 17, 1000, 1, false, true},
        ScanCase{"sum_rows_reverse_exclusive", ScanKind::sum, 5, 129, 1, true, true},
        ScanCase{"sum_rows_flipped_input", ScanKind::sum, 6, 4100, 1, false, false, true},
        ScanCase{"sum_rows_nan_inf", ScanKind::sum, 4, 300, 1, false, false, false, true},
        ScanCase{"prod_rows", ScanKind::prod, 33, 2048, 1},
        ScanCase{"prod_rows_exclusive_reverse", ScanKind::prod, 3, 70, 1, true, true},
        ScanCase{"sum_middle_axis", ScanKind::sum, 4, 500, 130},
        ScanCase{"sum_middle_axis_reverse_exclusive", ScanKind::sum, 3, 64, 33, true, true},
        ScanCase{"prod_middle_axis_flipped", ScanKind::prod, 2, 40, 7, false, false, true},
        ScanCase{"sum_first_axis", ScanKind::sum, 1, 1000, 257}),
    testing::case_name<ScanCase>);

TEST(ScanLaunch, RejectsBadArguments) {
  const ScanLoad load{nullptr, 1, 1, false};
  const ScanStore store{nullptr, 1, 1};
  EXPECT_EQ(launch_scan<ScanKind::sum>(ScanStrategy::warp_rows, 4, 8, 2, false, false, load, store,
                                       nullptr),
            cudaErrorInvalidValue);  // warp_rows scans the innermost axis only
  EXPECT_EQ(launch_scan<ScanKind::sum>(ScanStrategy::warp_rows, 4, 8, 1, false, false, load, store,
                                       nullptr, 48),
            cudaErrorInvalidValue);  // not whole warps
  EXPECT_EQ(launch_scan<ScanKind::sum>(ScanStrategy::columns, -1, 8, 1, false, false, load, store,
                                       nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_scan<ScanKind::sum>(ScanStrategy::columns, 0, 8, 1, false, false, load, store,
                                       nullptr),
            cudaSuccess);  // nothing to do, nothing launched
}

}  // namespace
}  // namespace stitch::kernels
