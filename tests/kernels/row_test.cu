// kernels/row.cuh on a GPU against double-precision CPU references: softmax, log-softmax, layer
// norm (with and without weight and bias) and RMS norm (with and without weight) over every
// strategy (warp per row with each register count, block per row, the two-pass loop), strided input
// rows, many rows (grid-stride), -inf and all -inf rows, large logits, offset data for the
// variance, and bit-identical reruns. Skips without a CUDA device.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/row.cuh"

namespace stitch::kernels {
namespace {

using detail::RowStrategy;
using testing::DeviceBuffer;
using testing::Tolerance;

struct RowLoad {
  const float* x;
  int64_t ld;
  __device__ float operator()(int64_t row, int64_t col) const { return x[row * ld + col]; }
};
struct RowStore {
  float* y;
  int64_t ld;
  __device__ void operator()(int64_t row, int64_t col, float v) const { y[row * ld + col] = v; }
};

enum class Op { softmax, log_softmax, layer_norm, layer_norm_plain, rms_norm, rms_norm_plain };
enum class Data {
  uniform,  // [-2, 2]
  large,    // [-100, 100]: exp would overflow without subtracting the max
  neg_inf,  // uniform with every third element -inf, and row 1 all -inf
  offset,   // 3 + [-1, 1]: variance of data with a large mean
};

struct RowCase {
  std::string name;
  Op op;
  int64_t rows, cols;
  Data data;
  RowStrategy strategy;
  int per_thread;  // K the plan must pick (0 for the loop)
};

const char* op_name(Op op) {
  switch (op) {
    case Op::softmax:
      return "softmax";
    case Op::log_softmax:
      return "log_softmax";
    case Op::layer_norm:
      return "layer_norm";
    case Op::layer_norm_plain:
      return "layer_norm_plain";
    case Op::rms_norm:
      return "rms_norm";
    case Op::rms_norm_plain:
      return "rms_norm_plain";
  }
  return "?";
}

std::vector<RowCase> cases() {
  using S = RowStrategy;
  struct Base {
    int64_t rows, cols;
    S strategy;
    int per_thread;
  };
  const Base bases[] = {
      {5, 1, S::warp, 1},        {7, 31, S::warp, 1},    {3, 32, S::warp, 1},
      {4, 33, S::warp, 2},       {9, 1000, S::warp, 32}, {100000, 31, S::warp, 1},
      {1000, 1024, S::warp, 32}, {3, 1025, S::block, 4}, {6, 5000, S::block, 16},
      {2, 8192, S::block, 16},   {2, 8193, S::loop, 0},  {2000, 8200, S::loop, 0},
      {3, 20000, S::loop, 0},
  };
  const Op ops[] = {Op::softmax,          Op::log_softmax, Op::layer_norm,
                    Op::layer_norm_plain, Op::rms_norm,    Op::rms_norm_plain};
  std::vector<RowCase> out;
  for (const Base& b : bases)
    for (Op op : ops)
      out.push_back(
          {std::string(op_name(op)) + "_" + std::to_string(b.rows) + "x" + std::to_string(b.cols),
           op, b.rows, b.cols, Data::uniform, b.strategy, b.per_thread});
  for (Op op : {Op::softmax, Op::log_softmax}) {
    const std::string name = op_name(op);
    out.push_back({name + "_neg_inf_warp", op, 4, 31, Data::neg_inf, S::warp, 1});
    out.push_back({name + "_neg_inf_block", op, 4, 5000, Data::neg_inf, S::block, 16});
    out.push_back({name + "_neg_inf_loop", op, 4, 20000, Data::neg_inf, S::loop, 0});
    out.push_back({name + "_large_warp", op, 4, 1000, Data::large, S::warp, 32});
    out.push_back({name + "_large_loop", op, 4, 20000, Data::large, S::loop, 0});
  }
  for (Op op : {Op::layer_norm, Op::rms_norm}) {
    const std::string name = op_name(op);
    out.push_back({name + "_offset_warp", op, 8, 1000, Data::offset, S::warp, 32});
    out.push_back({name + "_offset_block", op, 8, 8192, Data::offset, S::block, 16});
    out.push_back({name + "_offset_loop", op, 8, 20000, Data::offset, S::loop, 0});
  }
  return out;
}

constexpr float kLayerNormEps = 1e-5f;
constexpr float kRmsNormEps = 1e-6f;

Tolerance tolerance(Op op) {
  switch (op) {
    case Op::softmax:
      return Tolerance{1e-8, 1e-5, 0.0};
    case Op::log_softmax:
      return Tolerance{1e-5, 1e-6, 0.0};
    default:
      return Tolerance{1e-5, 1e-5, 0.0};
  }
}

// Row-by-row double reference; x has leading dimension ld.
std::vector<double> reference(const RowCase& c, const std::vector<float>& x, int64_t ld,
                              const std::vector<float>& weight, const std::vector<float>& bias) {
  std::vector<double> y(static_cast<size_t>(c.rows * c.cols));
  for (int64_t r = 0; r < c.rows; ++r) {
    const float* row = &x[r * ld];
    double* out = &y[r * c.cols];
    if (c.op == Op::softmax || c.op == Op::log_softmax) {
      double m = -INFINITY;
      for (int64_t j = 0; j < c.cols; ++j)
        m = std::max(m, static_cast<double>(row[j]));
      double s = 0.0;
      for (int64_t j = 0; j < c.cols; ++j)
        s += std::exp(row[j] - m);
      for (int64_t j = 0; j < c.cols; ++j)
        out[j] = c.op == Op::softmax ? std::exp(row[j] - m) / s : (row[j] - m) - std::log(s);
    } else if (c.op == Op::layer_norm || c.op == Op::layer_norm_plain) {
      double mean = 0.0, var = 0.0;
      for (int64_t j = 0; j < c.cols; ++j)
        mean += row[j];
      mean /= static_cast<double>(c.cols);
      for (int64_t j = 0; j < c.cols; ++j)
        var += (row[j] - mean) * (row[j] - mean);
      var /= static_cast<double>(c.cols);
      const double rstd = 1.0 / std::sqrt(var + kLayerNormEps);
      for (int64_t j = 0; j < c.cols; ++j) {
        double v = (row[j] - mean) * rstd;
        if (c.op == Op::layer_norm) v = v * weight[j] + bias[j];
        out[j] = v;
      }
    } else {
      double ms = 0.0;
      for (int64_t j = 0; j < c.cols; ++j)
        ms += static_cast<double>(row[j]) * row[j];
      const double scale = 1.0 / std::sqrt(ms / static_cast<double>(c.cols) + kRmsNormEps);
      for (int64_t j = 0; j < c.cols; ++j)
        out[j] = row[j] * scale * (c.op == Op::rms_norm ? weight[j] : 1.0);
    }
  }
  return y;
}

int launch(const RowCase& c, const RowLoad& load, const RowStore& store, const float* weight,
           const float* bias) {
  switch (c.op) {
    case Op::softmax:
      return launch_softmax(c.rows, c.cols, false, load, store, nullptr);
    case Op::log_softmax:
      return launch_softmax(c.rows, c.cols, true, load, store, nullptr);
    case Op::layer_norm:
      return launch_layer_norm(c.rows, c.cols, kLayerNormEps, weight, bias, load, store, nullptr);
    case Op::layer_norm_plain:
      return launch_layer_norm(c.rows, c.cols, kLayerNormEps, nullptr, nullptr, load, store,
                               nullptr);
    case Op::rms_norm:
      return launch_rms_norm(c.rows, c.cols, kRmsNormEps, weight, load, store, nullptr);
    case Op::rms_norm_plain:
      return launch_rms_norm(c.rows, c.cols, kRmsNormEps, nullptr, load, store, nullptr);
  }
  return cudaErrorInvalidValue;
}

// Test listings show the case name instead of the parameter's bytes.
void PrintTo(const RowCase& c, std::ostream* os) {
  *os << c.name;
}

class RowTest : public ::testing::TestWithParam<RowCase> {};

TEST_P(RowTest, MatchesReference) {
  REQUIRE_GPU();
  const RowCase& c = GetParam();
  const detail::RowPlan plan = detail::plan_row(c.cols);
  EXPECT_EQ(static_cast<int>(plan.strategy), static_cast<int>(c.strategy));
  EXPECT_EQ(plan.per_thread, c.per_thread);

  // Input rows padded by 3 elements (the load owns the layout); output contiguous.
  const int64_t ld = c.cols + 3;
  std::vector<float> x = testing::uniform_floats(static_cast<size_t>(c.rows * ld), 7, -2.0f, 2.0f);
  for (size_t i = 0; i < x.size(); ++i) {
    if (c.data == Data::large) x[i] *= 50.0f;
    if (c.data == Data::offset) x[i] = 3.0f + x[i] * 0.5f;
    if (c.data == Data::neg_inf && (i % 3 == 0 || (i / ld) == 1)) x[i] = -INFINITY;
  }
  const std::vector<float> weight =
      testing::uniform_floats(static_cast<size_t>(c.cols), 8, 0.5f, 1.5f);
  const std::vector<float> bias =
      testing::uniform_floats(static_cast<size_t>(c.cols), 9, -0.5f, 0.5f);
  DeviceBuffer<float> x_dev(x.size()), y_dev(static_cast<size_t>(c.rows * c.cols)),
      w_dev(weight.size()), b_dev(bias.size());
  ASSERT_CUDA(x_dev.upload(x));
  ASSERT_CUDA(w_dev.upload(weight));
  ASSERT_CUDA(b_dev.upload(bias));
  ASSERT_CUDA(cudaMemset(y_dev.data(), 0xff, y_dev.size() * sizeof(float)));  // NaN canary

  const RowLoad load{x_dev.data(), ld};
  const RowStore store{y_dev.data(), c.cols};
  ASSERT_CUDA(launch(c, load, store, w_dev.data(), b_dev.data()));
  ASSERT_CUDA(cudaDeviceSynchronize());
  const std::vector<float> first = y_dev.download();
  EXPECT_TRUE(testing::all_close(first, reference(c, x, ld, weight, bias), tolerance(c.op)));

  ASSERT_CUDA(cudaMemset(y_dev.data(), 0, y_dev.size() * sizeof(float)));
  ASSERT_CUDA(launch(c, load, store, w_dev.data(), b_dev.data()));
  ASSERT_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(testing::bitwise_equal(y_dev.download(), first)) << "second run differs";
}

INSTANTIATE_TEST_SUITE_P(Cases, RowTest, ::testing::ValuesIn(cases()), testing::case_name<RowCase>);

TEST(Row, EmptyAndInvalidShapes) {
  REQUIRE_GPU();
  const RowLoad load{nullptr, 0};
  const RowStore store{nullptr, 0};
  EXPECT_EQ(launch_softmax(0, 10, false, load, store, nullptr), cudaSuccess);
  EXPECT_EQ(launch_layer_norm(10, 0, 1e-5f, nullptr, nullptr, load, store, nullptr), cudaSuccess);
  EXPECT_EQ(launch_rms_norm(-1, 10, 1e-5f, nullptr, load, store, nullptr), cudaErrorInvalidValue);
  ASSERT_CUDA(cudaDeviceSynchronize());
}

}  // namespace
}  // namespace stitch::kernels
