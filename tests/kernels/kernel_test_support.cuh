// The differential harness shared by the kernel-library tests (tests/kernels/*_test.cu): device
// buffers, seeded inputs, the GPU-presence skip, and one comparison of a device result against a
// double-precision CPU reference with a declared tolerance. Each family's test file holds a table
// of cases; every case names its shape, its input setup, its reference and its tolerance.
#pragma once

#include <cuda_runtime.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace stitch::kernels::testing {

inline bool has_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_GPU() \
  if (!::stitch::kernels::testing::has_gpu()) GTEST_SKIP() << "no CUDA device"

// Asserts a cudaError_t (or an int holding one) is cudaSuccess.
#define ASSERT_CUDA(expr)                                                   \
  do {                                                                      \
    const cudaError_t assert_cuda_status_ = static_cast<cudaError_t>(expr); \
    ASSERT_EQ(assert_cuda_status_, cudaSuccess)                             \
        << #expr << ": " << cudaGetErrorName(assert_cuda_status_) << " ("   \
        << cudaGetErrorString(assert_cuda_status_) << ")";                  \
  } while (0)

// A device allocation of `count` T (at least one byte is allocated, so data() is never null).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) { allocate(count); }
  ~DeviceBuffer() { cudaFree(data_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  cudaError_t allocate(size_t count) {
    cudaFree(data_);
    data_ = nullptr;
    count_ = count;
    return cudaMalloc(&data_, count * sizeof(T) > 0 ? count * sizeof(T) : 1);
  }
  cudaError_t upload(const std::vector<T>& host) {
    return cudaMemcpy(data_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    if (cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost) != cudaSuccess)
      ADD_FAILURE() << "cudaMemcpy device to host failed";
    return host;
  }
  T* data() const { return static_cast<T*>(data_); }
  size_t size() const { return count_; }

 private:
  void* data_ = nullptr;
  size_t count_ = 0;
};

inline std::vector<float> uniform_floats(size_t n, uint64_t seed, float low, float high) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> out(n);
  for (float& v : out)
    v = dist(rng);
  return out;
}

// |actual - expected| <= atol + rtol * |expected| + mtol * scale, where scale is a per-element
// magnitude the case supplies (e.g. sum |x| of a reduction, sum |a||b| of a dot product): the bound
// of FP32 rounding, so a lower-precision kernel (TF32) fails while FP32 passes.
struct Tolerance {
  double atol = 0.0;
  double rtol = 0.0;
  double mtol = 0.0;
};

inline std::ostream& operator<<(std::ostream& os, const Tolerance& t) {
  return os << "atol " << t.atol << " rtol " << t.rtol << " mtol " << t.mtol;
}

// NaN must meet NaN, an infinity the same infinity; finite values the tolerance. Reports the count
// of mismatches, the first few and the worst error.
template <class Actual>
::testing::AssertionResult all_close(const std::vector<Actual>& actual,
                                     const std::vector<double>& expected, const Tolerance& tol,
                                     const std::vector<double>* scale = nullptr) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " vs reference " << expected.size();
  size_t bad = 0;
  double worst = 0.0;
  size_t worst_at = 0;
  std::ostringstream first;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double a = static_cast<double>(actual[i]), e = expected[i];
    bool ok;
    double err = 0.0;
    if (std::isnan(e)) {
      ok = std::isnan(a);
    } else if (std::isinf(e)) {
      ok = a == e;
    } else {
      err = std::fabs(a - e);
      const double bound =
          tol.atol + tol.rtol * std::fabs(e) + (scale ? tol.mtol * (*scale)[i] : 0.0);
      ok = std::isfinite(a) && err <= bound;
      if (err > worst || !std::isfinite(a)) {
        worst = std::isfinite(a) ? err : INFINITY;
        worst_at = i;
      }
    }
    if (!ok && bad++ < 5)
      first << "\n  [" << i << "] got " << a << " want " << e << " (err " << err << ")";
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.size() << " elements outside tolerance (" << tol
         << "); worst error " << worst << " at " << worst_at << first.str();
}

template <class T>
::testing::AssertionResult bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0)
      return ::testing::AssertionFailure() << "first difference at " << i;
  return ::testing::AssertionSuccess();
}

// [batch][a][b] into [batch][b][a]: NCDHW into NDHWC with (a, b) = (channels, positions), and
// back with them swapped.
template <class T>
std::vector<T> transpose_batched(const std::vector<T>& v, int64_t batch, int64_t a, int64_t b) {
  std::vector<T> out(v.size());
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        out[(n * b + j) * a + i] = v[(n * a + i) * b + j];
  return out;
}

// gtest parameter names: only [A-Za-z0-9_].
template <class Case>
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string name = info.param.name;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

// GELU with the tanh approximation, in double (the GEMM epilogues' reference).
inline double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// The GEMM reference of the cuBLASLt and 3xTF32 tests (matmul_test.cu, gemm_tf32x3_test.cu):
// D = epilogue(alpha · op(A) op(B) + beta · C (when c.accumulate) + bias) over the whole D buffer
// (padding keeps `d_initial`), and per element sum |terms| (the tolerance's scale). `Case` has
// batch, m, n, k, alpha, beta, accumulate and an epilogue of kernels/matmul.cuh's MatmulEpilogue;
// `Shape` is its MatmulShape (leading dimensions, batch strides, transposes).
template <class Case, class Shape>
void gemm_reference(const Case& c, const Shape& s, const std::vector<float>& a,
                    const std::vector<float>& b, const std::vector<float>& c_in,
                    const std::vector<float>& bias, const std::vector<float>& d_initial,
                    std::vector<double>& expected, std::vector<double>& scale) {
  using Epilogue = decltype(c.epilogue);
  expected.assign(d_initial.begin(), d_initial.end());
  scale.assign(d_initial.size(), 0.0);
  for (int64_t batch = 0; batch < c.batch; ++batch)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double sum = 0.0, magnitude = 0.0;
        for (int64_t q = 0; q < c.k; ++q) {
          const double x = a[batch * s.stride_a + (s.trans_a ? q * s.lda + i : i * s.lda + q)];
          const double y = b[batch * s.stride_b + (s.trans_b ? j * s.ldb + q : q * s.ldb + j)];
          sum += x * y;
          magnitude += std::fabs(x * y);
        }
        const int64_t at = batch * s.stride_c + i * s.ldc + j;
        double v = c.alpha * sum;
        magnitude *= std::fabs(c.alpha);
        if (c.accumulate) {
          v += c.beta * static_cast<double>(c_in[at]);
          magnitude += std::fabs(c.beta * c_in[at]);
        }
        if (epilogue_has_bias(c.epilogue)) {
          v += bias[j];
          magnitude += std::fabs(bias[j]);
        }
        if (c.epilogue == Epilogue::relu || c.epilogue == Epilogue::bias_relu)
          v = v > 0.0 ? v : 0.0;
        if (c.epilogue == Epilogue::gelu || c.epilogue == Epilogue::bias_gelu) v = gelu_tanh(v);
        expected[at] = v;
        scale[at] = magnitude;
      }
}

// A BatchNorm-like convolution input transform (kernels/plane_transform.cuh), relu(x ·
// scale[plane] + shift[plane]) with plane = n · C + c; apply() does the same operations on the CPU.
struct AffineRelu {
  const float* scale;
  const float* shift;
  __device__ float operator()(int64_t plane, float x) const {
    return fmaxf(fmaf(x, scale[plane], shift[plane]), 0.f);
  }
  static float apply(float x, float scale, float shift) {
    return std::fmax(std::fma(x, scale, shift), 0.f);
  }
};

}  // namespace stitch::kernels::testing
