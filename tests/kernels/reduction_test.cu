// kernels/reduction.cuh on a GPU against a double-precision CPU reference: every strategy (warp per
// row, block per row, columns; each with and without the split over blocks), every op (sum with and
// without a squaring prologue, prod, max, min, argmax/argmin with ties and NaN, mean_var,
// logsumexp with wide ranges, NaN and infinities), empty
// reductions, a strided source, one epilogue call per output, and bit-identical reruns. Skips
// without a CUDA device.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/reduction.cuh"

namespace stitch::kernels {
namespace {

using detail::ReduceStrategy;
using testing::DeviceBuffer;
using testing::Tolerance;

// ---- functors ----

// Reads x[o * so + r * sr + i * si], squared when asked (a sum of squares).
struct Load {
  const float* x;
  int64_t so, sr, si;
  bool square;
  __device__ float operator()(int64_t o, int64_t r, int64_t i) const {
    const float v = x[o * so + r * sr + i * si];
    return square ? v * v : v;
  }
};
struct StoreFloat {
  float* y;
  int* calls;
  int64_t inner;
  __device__ void operator()(int64_t o, int64_t i, float v) const {
    y[o * inner + i] = v;
    atomicAdd(&calls[o * inner + i], 1);
  }
};
struct StoreIndex {
  float* value;
  int64_t* index;
  int* calls;
  int64_t inner;
  __device__ void operator()(int64_t o, int64_t i, ValueIndex v) const {
    value[o * inner + i] = v.value;
    index[o * inner + i] = v.index;
    atomicAdd(&calls[o * inner + i], 1);
  }
};
struct StoreMeanVar {
  float* mean;
  float* m2;
  int64_t* count;
  int* calls;
  int64_t inner;
  __device__ void operator()(int64_t o, int64_t i, MeanVar v) const {
    mean[o * inner + i] = v.mean;
    m2[o * inner + i] = v.m2;
    count[o * inner + i] = v.count;
    atomicAdd(&calls[o * inner + i], 1);
  }
};

// ---- cases: shapes × op variants ----

struct Shape {
  std::string name;
  int64_t outer, reduce, inner;
  ReduceStrategy strategy;      // what plan_reduce must pick
  bool split;                   // and whether it splits the reduce axis
  bool reduce_fastest = false;  // memory is [outer, inner, reduce] (strided loads)
};

std::vector<Shape> shapes() {
  using S = ReduceStrategy;
  return {
      {"thread_tiny", 7, 5, 1, S::row_per_thread, false},
      {"thread_many_windows", 50000, 4, 1, S::row_per_thread, false},
      {"warp_17", 7, 17, 1, S::row_per_warp, false},
      {"warp_1024", 33, 1024, 1, S::row_per_warp, false},
      {"thread_empty_rows", 4, 0, 1, S::row_per_thread, false},
      {"block_1025", 5, 1025, 1, S::row_per_block, false},
      {"block_many_rows", 600, 3000, 1, S::row_per_block, false},
      {"block_split", 3, 1048579, 1, S::row_per_block, true},
      {"block_single_row_split", 1, 5000000, 1, S::row_per_block, true},
      {"columns_inner3", 4, 33, 3, S::columns, false},
      {"columns_inner64", 2, 100, 64, S::columns, false},
      {"columns_wide", 64, 17, 1000, S::columns, false},
      {"columns_split", 1, 100000, 5, S::columns, true},
      {"columns_strided_source_split", 1, 3000, 40, S::columns, true, true},
      {"columns_empty_reduce", 3, 0, 2, S::columns, false},
      {"empty_outer", 0, 5, 3, S::columns, false},
  };
}

enum class Data {
  uniform,   // [-1, 1]
  near_one,  // 1 + u / sqrt(reduce): products stay near 1
  ties,      // integers 0..3: many equal extremes
  with_nan,  // uniform, and in every other output two NaNs (at reduce/3 and 2 reduce/3)
  offset,    // 100 + u: Welford's stability
  wide,      // 40 u: exponentials over 35 orders of magnitude (logsumexp's rescaling)
  infinite,  // uniform, and per output by its index mod 4: as is, one +inf, all -inf, a -inf
};

struct Variant {
  std::string name;
  ReduceOp op;
  Data data;
  bool square = false;
};

std::vector<Variant> variants() {
  return {
      {"sum", ReduceOp::sum, Data::uniform},
      {"sum_of_squares", ReduceOp::sum, Data::uniform, true},
      {"prod", ReduceOp::prod, Data::near_one},
      {"max", ReduceOp::max, Data::uniform},
      {"min_nan", ReduceOp::min, Data::with_nan},
      {"max_nan", ReduceOp::max, Data::with_nan},
      {"argmax_ties", ReduceOp::argmax, Data::ties},
      {"argmin_ties", ReduceOp::argmin, Data::ties},
      {"argmax_nan", ReduceOp::argmax, Data::with_nan},
      {"argmin_nan", ReduceOp::argmin, Data::with_nan},
      {"mean_var", ReduceOp::mean_var, Data::offset},
      {"logsumexp", ReduceOp::logsumexp, Data::wide},
      {"logsumexp_nan", ReduceOp::logsumexp, Data::with_nan},
      {"logsumexp_infinite", ReduceOp::logsumexp, Data::infinite},
  };
}

// ---- reference ----

struct Reference {
  std::vector<double> value;  // sum/prod/max/min, the argmax value, or the mean
  std::vector<double> scale;  // sum |x| (sum) per output, for the tolerance
  std::vector<double> m2;     // mean_var
  std::vector<int64_t> index;
  std::vector<int64_t> count;
};

Reference reference(const std::vector<float>& x, const Shape& s, const Variant& v,
                    const Load& load) {
  const int64_t outputs = s.outer * s.inner;
  Reference ref;
  ref.value.assign(outputs, 0.0);
  ref.scale.assign(outputs, 0.0);
  ref.m2.assign(outputs, 0.0);
  ref.index.assign(outputs, -1);
  ref.count.assign(outputs, 0);
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      const int64_t k = o * s.inner + i;
      double acc = v.op == ReduceOp::prod ? 1.0 : 0.0;
      if (v.op == ReduceOp::max || v.op == ReduceOp::argmax || v.op == ReduceOp::logsumexp)
        acc = -INFINITY;
      if (v.op == ReduceOp::min || v.op == ReduceOp::argmin) acc = INFINITY;
      double abs_sum = 0.0;
      bool nan_seen = false;
      for (int64_t r = 0; r < s.reduce; ++r) {
        double e = x[o * load.so + r * load.sr + i * load.si];
        if (v.square) e = static_cast<double>(static_cast<float>(e * e));  // the prologue's float
        abs_sum += std::fabs(e);
        switch (v.op) {
          case ReduceOp::sum:
          case ReduceOp::mean_var:
            acc += e;
            break;
          case ReduceOp::prod:
            acc *= e;
            break;
          case ReduceOp::max:
          case ReduceOp::min:
            if (std::isnan(e) || std::isnan(acc))
              acc = NAN;
            else
              acc = v.op == ReduceOp::max ? std::max(acc, e) : std::min(acc, e);
            break;
          case ReduceOp::logsumexp:  // the max here; the sum of exponentials below
            if (std::isnan(e) || std::isnan(acc))
              acc = NAN;
            else
              acc = std::max(acc, e);
            break;
          case ReduceOp::argmax:
          case ReduceOp::argmin:
            if (nan_seen) break;
            if (std::isnan(e)) {
              nan_seen = true;
              acc = NAN;
              ref.index[k] = r;
            } else if (v.op == ReduceOp::argmax ? e > acc : e < acc) {
              acc = e;
              ref.index[k] = r;
            } else if (ref.index[k] < 0 && e == acc) {
              ref.index[k] = r;  // every element is ±inf
            }
            break;
        }
      }
      ref.scale[k] = abs_sum;
      ref.value[k] = acc;
      if (v.op == ReduceOp::logsumexp && std::isfinite(acc)) {
        double sum = 0.0;
        for (int64_t r = 0; r < s.reduce; ++r)
          sum += std::exp(static_cast<double>(x[o * load.so + r * load.sr + i * load.si]) - acc);
        ref.value[k] = std::log(sum) + acc;
        ref.scale[k] = 0.0;
      }
      if (v.op == ReduceOp::mean_var) {
        ref.count[k] = s.reduce;
        const double mean = s.reduce > 0 ? acc / static_cast<double>(s.reduce) : 0.0;
        double m2 = 0.0;
        for (int64_t r = 0; r < s.reduce; ++r) {
          const double d = x[o * load.so + r * load.sr + i * load.si] - mean;
          m2 += d * d;
        }
        ref.value[k] = mean;
        ref.m2[k] = m2;
      }
    }
  return ref;
}

// ---- the runner ----

std::vector<float> make_data(const Shape& s, const Variant& v, const Load& layout) {
  const int64_t n = s.outer * s.reduce * s.inner;
  std::vector<float> x = testing::uniform_floats(static_cast<size_t>(n), 42, -1.0f, 1.0f);
  const double spread = 1.0 / std::sqrt(static_cast<double>(s.reduce > 0 ? s.reduce : 1));
  for (float& e : x) {
    switch (v.data) {
      case Data::uniform:
      case Data::with_nan:
        break;
      case Data::near_one:
        e = static_cast<float>(1.0 + e * spread);
        break;
      case Data::ties:
        e = std::floor((e + 1.0f) * 2.0f);
        break;  // 0, 1, 2, 3
      case Data::offset:
        e = 100.0f + e;
        break;
      case Data::wide:
        e = 40.0f * e;
        break;
      case Data::infinite:
        break;
    }
  }
  if (v.data == Data::infinite && s.reduce >= 1)
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i) {
        const int64_t k = o * s.inner + i;
        auto at = [&](int64_t r) -> float& {
          return x[o * layout.so + r * layout.sr + i * layout.si];
        };
        if (k % 4 == 1) at(s.reduce / 2) = INFINITY;
        if (k % 4 == 2)
          for (int64_t r = 0; r < s.reduce; ++r)
            at(r) = -INFINITY;
        if (k % 4 == 3) at(s.reduce - 1) = -INFINITY;
      }
  if (v.data == Data::with_nan && s.reduce >= 3)
    for (int64_t o = 0; o < s.outer; ++o)
      for (int64_t i = 0; i < s.inner; ++i)
        if ((o * s.inner + i) % 2 == 0)
          for (int64_t r : {s.reduce / 3, 2 * s.reduce / 3})
            x[o * layout.so + r * layout.sr + i * layout.si] = NAN;
  return x;
}

Tolerance tolerance_for(const Variant& v, int64_t reduce) {
  constexpr double eps = 1.0 / (1 << 24);
  switch (v.op) {
    // Each partial sum is a short serial run (at most ~40 elements per thread, then a tree), so
    // the rounding error stays far below this multiple of sum |x|.
    case ReduceOp::sum:
      return Tolerance{1e-6, 1e-6, 4e-6};
    // The product accumulates in double (reduction.cuh): only the final rounding to float and
    // the inputs' own rounding remain. A float accumulator failed this at n >= 2^20 on an H200.
    case ReduceOp::prod:
      return Tolerance{0.0, 4.0 * eps + 1e-9 * std::sqrt(static_cast<double>(reduce)), 0.0};
    case ReduceOp::mean_var:
      return Tolerance{0.0, 2e-6, 0.0};  // the mean; m2 has its own below
    // A few roundings of exp per element and of the rescaling, then log: the result (at least
    // the max, ~|x|) is off by a few ulps of itself at most.
    case ReduceOp::logsumexp:
      return Tolerance{1e-6, 1e-6, 0.0};
    default:
      return Tolerance{};  // max, min, argmax, argmin are exact
  }
}

// Test listings show the case name instead of the parameter's bytes.
void PrintTo(const Shape& c, std::ostream* os) {
  *os << c.name;
}
void PrintTo(const Variant& c, std::ostream* os) {
  *os << c.name;
}

using Param = std::tuple<Shape, Variant>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param).name + "_" + std::get<1>(info.param).name;
}

class ReductionTest : public ::testing::TestWithParam<Param> {};

template <ReduceOp Op, class Epi>
cudaError_t launch(const Shape& s, const Load& load, const Epi& epi, void* workspace) {
  return static_cast<cudaError_t>(
      launch_reduce<Op>(s.outer, s.reduce, s.inner, load, epi, workspace, nullptr));
}

TEST_P(ReductionTest, MatchesReference) {
  REQUIRE_GPU();
  const Shape& s = std::get<0>(GetParam());
  const Variant& v = std::get<1>(GetParam());
  const detail::ReducePlan plan = detail::plan_reduce(s.outer, s.reduce, s.inner);
  EXPECT_EQ(static_cast<int>(plan.strategy), static_cast<int>(s.strategy));
  EXPECT_EQ(plan.splits > 1, s.split) << "splits " << plan.splits;

  const int64_t n = s.outer * s.reduce * s.inner;
  const int64_t outputs = s.outer * s.inner;
  Load layout{nullptr, s.reduce * s.inner, s.inner, 1, v.square};
  if (s.reduce_fastest) layout = Load{nullptr, s.reduce * s.inner, 1, s.reduce, v.square};
  const std::vector<float> x = make_data(s, v, layout);
  DeviceBuffer<float> x_dev(n);
  ASSERT_CUDA(x_dev.upload(x));
  Load load = layout;
  load.x = x_dev.data();

  const size_t workspace_bytes = reduce_workspace_bytes(s.outer, s.reduce, s.inner);
  EXPECT_EQ(workspace_bytes > 0, s.split);
  DeviceBuffer<uint8_t> workspace(workspace_bytes);
  DeviceBuffer<int> calls(outputs);
  ASSERT_CUDA(cudaMemset(calls.data(), 0, outputs * sizeof(int)));
  const Reference ref = reference(x, s, v, layout);
  const Tolerance tol = tolerance_for(v, s.reduce);

  if (v.op == ReduceOp::argmax || v.op == ReduceOp::argmin) {
    DeviceBuffer<float> value(outputs);
    DeviceBuffer<int64_t> index(outputs);
    const StoreIndex epi{value.data(), index.data(), calls.data(), s.inner};
    ASSERT_CUDA(v.op == ReduceOp::argmax
                    ? launch<ReduceOp::argmax>(s, load, epi, workspace.data())
                    : launch<ReduceOp::argmin>(s, load, epi, workspace.data()));
    ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(index.download(), ref.index);
    EXPECT_TRUE(testing::all_close(value.download(), ref.value, tol));
  } else if (v.op == ReduceOp::mean_var) {
    DeviceBuffer<float> mean(outputs), m2(outputs);
    DeviceBuffer<int64_t> count(outputs);
    const StoreMeanVar epi{mean.data(), m2.data(), count.data(), calls.data(), s.inner};
    ASSERT_CUDA(launch<ReduceOp::mean_var>(s, load, epi, workspace.data()));
    ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_EQ(count.download(), ref.count);
    EXPECT_TRUE(testing::all_close(mean.download(), ref.value, tol)) << "mean";
    EXPECT_TRUE(testing::all_close(m2.download(), ref.m2, Tolerance{1e-6, 1e-4, 0.0})) << "m2";
  } else {
    DeviceBuffer<float> y(outputs);
    const StoreFloat epi{y.data(), calls.data(), s.inner};
    auto run = [&] {
      switch (v.op) {
        case ReduceOp::sum:
          return launch<ReduceOp::sum>(s, load, epi, workspace.data());
        case ReduceOp::prod:
          return launch<ReduceOp::prod>(s, load, epi, workspace.data());
        case ReduceOp::max:
          return launch<ReduceOp::max>(s, load, epi, workspace.data());
        case ReduceOp::logsumexp:
          return launch<ReduceOp::logsumexp>(s, load, epi, workspace.data());
        default:
          return launch<ReduceOp::min>(s, load, epi, workspace.data());
      }
    };
    ASSERT_CUDA(run());
    ASSERT_CUDA(cudaDeviceSynchronize());
    const std::vector<float> first = y.download();
    EXPECT_TRUE(testing::all_close(first, ref.value, tol, &ref.scale));
    // Reproducible: a second run gives the same bits (no atomics, fixed combine order). The
    // epilogue-call count below is then the second run's.
    ASSERT_CUDA(cudaMemset(y.data(), 0, outputs * sizeof(float)));
    ASSERT_CUDA(cudaMemset(calls.data(), 0, outputs * sizeof(int)));
    ASSERT_CUDA(run());
    ASSERT_CUDA(cudaDeviceSynchronize());
    EXPECT_TRUE(testing::bitwise_equal(y.download(), first));
  }
  const std::vector<int> counted = calls.download();
  for (int64_t k = 0; k < outputs; ++k)
    ASSERT_EQ(counted[k], 1) << "epilogue calls for output " << k;
}

INSTANTIATE_TEST_SUITE_P(Cases, ReductionTest,
                         ::testing::Combine(::testing::ValuesIn(shapes()),
                                            ::testing::ValuesIn(variants())),
                         param_name);

TEST(Reduction, SplitWithoutWorkspaceIsRejected) {
  REQUIRE_GPU();
  DeviceBuffer<float> x(1), y(1);
  DeviceBuffer<int> calls(1);
  const Load load{x.data(), 0, 0, 0, false};  // reads x[0] for every element
  const StoreFloat epi{y.data(), calls.data(), 1};
  ASSERT_GT(reduce_workspace_bytes(1, 5000000, 1), 0u);
  EXPECT_EQ(launch_reduce<ReduceOp::sum>(1, 5000000, 1, load, epi, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(launch_reduce<ReduceOp::sum>(-1, 5, 1, load, epi, nullptr), cudaErrorInvalidValue);
  ASSERT_CUDA(cudaGetLastError());
}

}  // namespace
}  // namespace stitch::kernels
