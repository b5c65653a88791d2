// kernels/elementwise.cuh on a GPU against a double-precision CPU walk of the index space: every
// path (vector4 with each kind of broadcast and a scalar tail, strided with 32- and 64-bit
// indices), every dtype conversion, fills, two outputs, in-place, empty and rank-0 spaces, and
// elements the launch must not touch (canary bytes). Each case also checks which path the plan
// picked. Skips without a CUDA device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernel_test_support.cuh"
#include "kernels/elementwise.cuh"

namespace stitch::kernels {
namespace {

using detail::ElementwisePath;
using testing::DeviceBuffer;
using testing::Tolerance;

// ---- functors under test and their double references ----

struct Affine {  // y = 1.5 x0 + x1
  __device__ void operator()(const float (&x)[2], float (&y)[1]) const {
    y[0] = x[0] * 1.5f + x[1];
  }
};
struct FmaMax {  // y0 = x0 x1 + x2, y1 = max(x0, x2)
  __device__ void operator()(const float (&x)[3], float (&y)[2]) const {
    y[0] = x[0] * x[1] + x[2];
    y[1] = fmaxf(x[0], x[2]);
  }
};
struct Fill {
  __device__ void operator()(float (&y)[1]) const { y[0] = 2.5f; }
};
struct Copy {
  __device__ void operator()(const float (&x)[1], float (&y)[1]) const { y[0] = x[0]; }
};
struct Where {  // y = x0 ? x1 : x2
  __device__ void operator()(const float (&x)[3], float (&y)[1]) const {
    y[0] = x[0] != 0.0f ? x[1] : x[2];
  }
};
struct PlusOne {
  __device__ void operator()(const float (&x)[1], float (&y)[1]) const { y[0] = x[0] + 1.0f; }
};

enum class Fn { affine, fma_max, fill, copy, where };

void reference(Fn fn, const std::vector<double>& x, std::vector<double>& y) {
  switch (fn) {
    case Fn::affine:
      y[0] = x[0] * 1.5 + x[1];
      return;
    case Fn::fma_max:
      y[0] = x[0] * x[1] + x[2];
      y[1] = std::max(x[0], x[2]);
      return;
    case Fn::fill:
      y[0] = 2.5;
      return;
    case Fn::copy:
      y[0] = x[0];
      return;
    case Fn::where:
      y[0] = x[0] != 0.0 ? x[1] : x[2];
      return;
  }
}

// ---- host-side dtype handling ----

double read_host(const std::vector<uint8_t>& buffer, int dtype, int64_t i) {
  const uint8_t* p = buffer.data() + i * dtype_bytes(dtype);
  auto get = [p](auto zero) {
    decltype(zero) v;
    std::memcpy(&v, p, sizeof(v));
    return static_cast<double>(v);
  };
  switch (dtype) {
    case kDtypeFloat32:
      return get(float{});
    case kDtypeFloat64:
      return get(double{});
    case kDtypeInt64:
      return get(int64_t{});
    case kDtypeInt32:
      return get(int32_t{});
    case kDtypeInt16:
      return get(int16_t{});
    case kDtypeInt8:
      return get(int8_t{});
    case kDtypeUInt8:
      return get(uint8_t{});
    case kDtypeBool:
      return *p != 0 ? 1.0 : 0.0;
  }
  return NAN;
}

void write_host(std::vector<uint8_t>& buffer, int dtype, int64_t i, double v) {
  uint8_t* p = buffer.data() + i * dtype_bytes(dtype);
  auto put = [p](auto value) { std::memcpy(p, &value, sizeof(value)); };
  switch (dtype) {
    case kDtypeFloat32:
      put(static_cast<float>(v));
      return;
    case kDtypeFloat64:
      put(v);
      return;
    case kDtypeInt64:
      put(static_cast<int64_t>(v));
      return;
    case kDtypeInt32:
      put(static_cast<int32_t>(v));
      return;
    case kDtypeInt16:
      put(static_cast<int16_t>(v));
      return;
    case kDtypeInt8:
      put(static_cast<int8_t>(v));
      return;
    case kDtypeUInt8:
      put(static_cast<uint8_t>(v));
      return;
    case kDtypeBool:
      *p = v != 0.0 ? 1 : 0;
      return;
  }
}

// What the kernel stores for a float result (see store_from_float): the value the reference
// expects in the output buffer.
double stored_value(double v, int dtype) {
  auto clamp = [](double t, double low, double high) { return std::min(std::max(t, low), high); };
  switch (dtype) {
    case kDtypeFloat32:
    case kDtypeFloat64:
      return v;
    case kDtypeInt64:
      return std::trunc(v);
    case kDtypeInt32:
      return clamp(std::trunc(v), INT32_MIN, INT32_MAX);
    case kDtypeInt16:
      return clamp(std::trunc(v), INT16_MIN, INT16_MAX);
    case kDtypeInt8:
      return clamp(std::trunc(v), INT8_MIN, INT8_MAX);
    case kDtypeUInt8:
      return static_cast<double>(static_cast<uint64_t>(static_cast<int64_t>(std::trunc(v))) &
                                 0xffu);
    case kDtypeBool:
      return v != 0.0 ? 1.0 : 0.0;
  }
  return NAN;
}

// ---- cases ----

struct Operand {
  int dtype = kDtypeFloat32;
  std::vector<int64_t> strides;  // per index-space dimension, in elements
  int64_t offset = 0;            // elements before coordinate 0
};

enum class Values {
  mixed,       // floats in [-2, 2], integers in [-5, 5] (uint8 [0, 9], bool 0/1)
  conversion,  // a cycle of values that exercise truncation, saturation and wrap-around
};

struct ElementwiseCase {
  std::string name;
  Fn fn;
  std::vector<int64_t> shape;
  std::vector<Operand> in, out;
  ElementwisePath path;  // what the plan must pick
  Tolerance tol;         // for float outputs; integer and bool outputs must match exactly
  Values values = Values::mixed;
  bool force_wide = false;
  bool in_place = false;  // out[0] is in[0]'s buffer (same layout)
};

std::vector<int64_t> row_major(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}
Operand dense(const std::vector<int64_t>& shape, int dtype = kDtypeFloat32, int64_t offset = 0) {
  return Operand{dtype, row_major(shape), offset};
}
// Broadcast along the dimensions where keep[d] is false (stride 0), contiguous over the rest.
Operand broadcast(const std::vector<int64_t>& shape, const std::vector<bool>& keep,
                  int dtype = kDtypeFloat32) {
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t s = 1;
  for (size_t d = shape.size(); d-- > 0;)
    if (keep[d]) {
      strides[d] = s;
      s *= shape[d];
    }
  return Operand{dtype, strides, 0};
}
// A 2-d [rows, cols] view of a [cols, rows] contiguous tensor (a transpose).
Operand transposed(int64_t rows, int64_t cols, int dtype = kDtypeFloat32) {
  (void)cols;
  return Operand{dtype, {1, rows}, 0};
}

const Tolerance kFloatTol{1e-6, 1e-6, 0.0};

std::vector<ElementwiseCase> cases() {
  using P = ElementwisePath;
  std::vector<ElementwiseCase> c;
  const std::vector<int64_t> s1k = {1024};
  c.push_back({"contiguous_float4",
               Fn::affine,
               s1k,
               {dense(s1k), dense(s1k)},
               {dense(s1k)},
               P::vector4,
               kFloatTol});
  // 4,000,003 elements: more float4s than one wave of threads (grid-stride) and a 3-element tail.
  const std::vector<int64_t> s4m = {4000003};
  c.push_back({"contiguous_tail_grid_stride",
               Fn::affine,
               s4m,
               {dense(s4m), dense(s4m)},
               {dense(s4m)},
               P::vector4,
               kFloatTol});
  c.push_back({"contiguous_tail_forced_64bit",
               Fn::affine,
               {1003},
               {dense({1003}), dense({1003})},
               {dense({1003})},
               P::vector4,
               kFloatTol,
               Values::mixed,
               true});
  const std::vector<int64_t> s2d = {37, 64};
  c.push_back({"bias_per_column_forced_64bit",
               Fn::affine,
               s2d,
               {dense(s2d), broadcast(s2d, {false, true})},
               {dense(s2d)},
               P::vector4,
               kFloatTol,
               Values::mixed,
               true});
  c.push_back({"bias_per_column",
               Fn::affine,
               s2d,
               {dense(s2d), broadcast(s2d, {false, true})},
               {dense(s2d)},
               P::vector4,
               kFloatTol});
  c.push_back({"scale_per_row_int64",
               Fn::affine,
               s2d,
               {dense(s2d), broadcast(s2d, {true, false}, kDtypeInt64)},
               {dense(s2d)},
               P::vector4,
               kFloatTol});
  c.push_back({"scalar_broadcast",
               Fn::affine,
               {5, 8},
               {dense({5, 8}), broadcast({5, 8}, {false, false})},
               {dense({5, 8})},
               P::vector4,
               kFloatTol});
  c.push_back({"two_outputs_float4",
               Fn::fma_max,
               s2d,
               {dense(s2d), dense(s2d), broadcast(s2d, {false, true})},
               {dense(s2d), dense(s2d)},
               P::vector4,
               kFloatTol});
  c.push_back({"fill_float4", Fn::fill, {3, 20}, {}, {dense({3, 20})}, P::vector4, kFloatTol});
  c.push_back({"in_place_float4",
               Fn::affine,
               s1k,
               {dense(s1k), dense(s1k)},
               {dense(s1k)},
               P::vector4,
               kFloatTol,
               Values::mixed,
               false,
               true});
  // NCHW with a per-channel operand: rows are [N, C], each channel's value read per row.
  const std::vector<int64_t> nchw = {4, 6, 12};
  c.push_back({"per_channel_nchw",
               Fn::affine,
               nchw,
               {dense(nchw), broadcast(nchw, {false, true, false})},
               {dense(nchw)},
               P::vector4,
               kFloatTol});
  c.push_back(
      {"per_channel_nchw_forced_64bit",
       Fn::fma_max,
       nchw,
       {dense(nchw), broadcast(nchw, {false, true, false}), broadcast(nchw, {false, false, true})},
       {dense(nchw), dense(nchw)},
       P::vector4,
       kFloatTol,
       Values::mixed,
       true});
  // A per-row operand whose two row dimensions do not merge (strides 7 and 1 over [4, 6]).
  c.push_back({"per_row_two_strides",
               Fn::affine,
               nchw,
               {dense(nchw), Operand{kDtypeInt32, {7, 1, 0}, 2}},
               {dense(nchw)},
               P::vector4,
               kFloatTol});
  // Per outer row and per column at once: no float4 read fits.
  c.push_back({"outer_and_column_broadcast",
               Fn::affine,
               nchw,
               {dense(nchw), broadcast(nchw, {true, false, true})},
               {dense(nchw)},
               P::strided32,
               kFloatTol});
  // Misaligned by one float: the same space must take the strided path.
  c.push_back({"misaligned_offset",
               Fn::affine,
               {64},
               {dense({64}, kDtypeFloat32, 1), dense({64})},
               {dense({64})},
               P::strided32,
               kFloatTol});
  c.push_back({"odd_cols_bias",
               Fn::affine,
               {7, 33},
               {dense({7, 33}), broadcast({7, 33}, {false, true})},
               {dense({7, 33})},
               P::strided32,
               kFloatTol});
  c.push_back({"transposed_input",
               Fn::affine,
               {33, 17},
               {transposed(33, 17), dense({33, 17})},
               {dense({33, 17})},
               P::strided32,
               kFloatTol});
  const std::vector<int64_t> s5 = {2, 3, 1, 5, 7};
  c.push_back({"rank5_broadcasts",
               Fn::fma_max,
               s5,
               {dense(s5), broadcast(s5, {true, false, true, true, false}),
                broadcast(s5, {false, true, true, false, true}, kDtypeFloat64)},
               {dense(s5), dense(s5, kDtypeFloat64)},
               P::strided32,
               kFloatTol});
  c.push_back({"rank5_forced_64bit",
               Fn::fma_max,
               s5,
               {dense(s5), broadcast(s5, {true, false, true, true, false}),
                broadcast(s5, {false, true, true, false, true}, kDtypeFloat64)},
               {dense(s5), dense(s5, kDtypeFloat64)},
               P::strided64,
               kFloatTol,
               Values::mixed,
               true});
  c.push_back({"transposed_forced_64bit",
               Fn::affine,
               {33, 17},
               {transposed(33, 17), dense({33, 17})},
               {dense({33, 17})},
               P::strided64,
               kFloatTol,
               Values::mixed,
               true});
  // Every other element of a [6, 10] buffer: the untouched ones keep their canary bytes.
  c.push_back({"fill_strided_output",
               Fn::fill,
               {6, 5},
               {},
               {Operand{kDtypeFloat32, {10, 2}, 1}},
               P::strided32,
               kFloatTol});
  c.push_back({"where_mixed_dtypes",
               Fn::where,
               {9, 11},
               {dense({9, 11}, kDtypeBool), dense({9, 11}, kDtypeInt32),
                broadcast({9, 11}, {false, true}, kDtypeFloat64)},
               {dense({9, 11})},
               P::strided32,
               kFloatTol});
  c.push_back({"uint8_int16_int8_inputs",
               Fn::fma_max,
               {4, 6},
               {dense({4, 6}, kDtypeUInt8), dense({4, 6}, kDtypeInt16), dense({4, 6}, kDtypeInt8)},
               {dense({4, 6}, kDtypeInt64), dense({4, 6}, kDtypeInt32)},
               P::strided32,
               kFloatTol});
  for (int dtype :
       {kDtypeFloat64, kDtypeInt64, kDtypeInt32, kDtypeInt16, kDtypeInt8, kDtypeUInt8, kDtypeBool})
    c.push_back({"convert_to_dtype_" + std::to_string(dtype),
                 Fn::copy,
                 {3, 7},
                 {dense({3, 7})},
                 {dense({3, 7}, dtype)},
                 P::strided32,
                 kFloatTol,
                 Values::conversion});
  c.push_back({"empty_space",
               Fn::affine,
               {0, 5},
               {dense({0, 5}), dense({0, 5})},
               {dense({0, 5})},
               P::empty,
               kFloatTol});
  c.push_back({"rank0",
               Fn::affine,
               {},
               {Operand{kDtypeFloat32, {}, 0}, Operand{kDtypeFloat32, {}, 0}},
               {Operand{kDtypeFloat32, {}, 0}},
               P::vector4,
               kFloatTol});
  return c;
}

// ---- the runner ----

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}
int64_t buffer_elements(const ElementwiseCase& c, const Operand& op) {
  int64_t reach = op.offset;
  for (size_t d = 0; d < c.shape.size(); ++d)
    if (c.shape[d] > 0) reach += (c.shape[d] - 1) * op.strides[d];
  return reach + 1;
}

std::vector<uint8_t> make_input(const Operand& op, int64_t elements, Values values, uint64_t seed) {
  std::vector<uint8_t> bytes(static_cast<size_t>(elements) * dtype_bytes(op.dtype));
  std::mt19937_64 rng(seed);
  static const double kConversion[] = {-3.7, 2.5,  300.0, -1.0,  40000.0, -200.0, 3e9,
                                       0.0,  1e10, -0.5,  127.9, -128.9,  65535.0};
  for (int64_t i = 0; i < elements; ++i) {
    double v;
    if (values == Values::conversion) {
      v = kConversion[i % (sizeof(kConversion) / sizeof(kConversion[0]))];
    } else if (op.dtype == kDtypeFloat32 || op.dtype == kDtypeFloat64) {
      v = std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
      if (op.dtype == kDtypeFloat32) v = static_cast<float>(v);
    } else if (op.dtype == kDtypeBool) {
      v = static_cast<double>(rng() % 2);
    } else if (op.dtype == kDtypeUInt8) {
      v = static_cast<double>(rng() % 10);
    } else {
      v = static_cast<double>(static_cast<int64_t>(rng() % 11) - 5);
    }
    write_host(bytes, op.dtype, i, v);
  }
  return bytes;
}

template <int NIn, int NOut, class F>
void run_case(const ElementwiseCase& c, const F& fn) {
  ASSERT_EQ(c.in.size(), static_cast<size_t>(NIn));
  ASSERT_EQ(c.out.size(), static_cast<size_t>(NOut));
  const int rank = static_cast<int>(c.shape.size());
  constexpr int kIn = NIn > 0 ? NIn : 1;

  std::vector<std::vector<uint8_t>> in_host(NIn), out_initial(NOut);
  std::vector<DeviceBuffer<uint8_t>> in_dev(NIn), out_dev(NOut);
  TensorOperand in[kIn] = {};
  OutOperand out[NOut] = {};
  for (int j = 0; j < NIn; ++j) {
    const Operand& op = c.in[j];
    in_host[j] = make_input(op, buffer_elements(c, op), c.values, 1000 + j);
    ASSERT_CUDA(in_dev[j].allocate(in_host[j].size()));
    ASSERT_CUDA(in_dev[j].upload(in_host[j]));
    in[j].data = in_dev[j].data();
    in[j].dtype = op.dtype;
    in[j].offset = op.offset;
    std::copy(op.strides.begin(), op.strides.end(), in[j].strides);
  }
  for (int j = 0; j < NOut; ++j) {
    const Operand& op = c.out[j];
    if (c.in_place && j == 0) {
      out_initial[j] = in_host[0];
      out[j].data = in_dev[0].data();
    } else {
      out_initial[j].assign(static_cast<size_t>(buffer_elements(c, op)) * dtype_bytes(op.dtype),
                            0xA5);  // canary
      ASSERT_CUDA(out_dev[j].allocate(out_initial[j].size()));
      ASSERT_CUDA(out_dev[j].upload(out_initial[j]));
      out[j].data = out_dev[j].data();
    }
    out[j].dtype = op.dtype;
    out[j].offset = op.offset;
    std::copy(op.strides.begin(), op.strides.end(), out[j].strides);
  }

  // The plan the launch will make, from the same pointers.
  detail::OperandViews<NIn, NOut> views;
  for (int j = 0; j < NIn; ++j)
    views.set(j, in[j]);
  for (int j = 0; j < NOut; ++j)
    views.set(NIn + j, out[j]);
  detail::ElementwiseOptions options;
  options.force_wide_index = c.force_wide;
  detail::ElementwisePlan<NIn, NOut> plan;
  ASSERT_CUDA((detail::plan_elementwise<NIn, NOut>(views.data, views.dtypes, views.strides, rank,
                                                   c.shape.data(), options, plan)));
  EXPECT_EQ(static_cast<int>(plan.path), static_cast<int>(c.path)) << "unexpected path";
  if (c.force_wide) EXPECT_TRUE(plan.wide_index);

  if (c.force_wide) {
    ASSERT_CUDA((detail::launch_elementwise_with<NIn, NOut>(
        fn, views.data, views.dtypes, views.strides, rank, c.shape.data(), nullptr, 256, options)));
  } else if constexpr (NIn == 0) {
    ASSERT_CUDA(launch_elementwise(fn, nullptr, out, rank, c.shape.data(), nullptr));
  } else {
    ASSERT_CUDA(launch_elementwise(fn, in, out, rank, c.shape.data(), nullptr));
  }
  ASSERT_CUDA(cudaDeviceSynchronize());

  // Reference: walk every coordinate.
  std::vector<std::vector<double>> expected(NOut);
  std::vector<std::vector<bool>> written(NOut);
  for (int j = 0; j < NOut; ++j) {
    const int64_t n = static_cast<int64_t>(out_initial[j].size()) / dtype_bytes(c.out[j].dtype);
    expected[j].assign(n, 0.0);
    written[j].assign(n, false);
  }
  const int64_t numel = numel_of(c.shape);
  std::vector<int64_t> coord(c.shape.size(), 0);
  std::vector<double> x(kIn), y(NOut);
  for (int64_t e = 0; e < numel; ++e) {
    for (int j = 0; j < NIn; ++j) {
      int64_t off = c.in[j].offset;
      for (int d = 0; d < rank; ++d)
        off += coord[d] * c.in[j].strides[d];
      x[j] = read_host(in_host[j], c.in[j].dtype, off);
      if (c.in[j].dtype == kDtypeFloat64) x[j] = static_cast<float>(x[j]);  // loaded as float
    }
    reference(c.fn, x, y);
    for (int j = 0; j < NOut; ++j) {
      int64_t off = c.out[j].offset;
      for (int d = 0; d < rank; ++d)
        off += coord[d] * c.out[j].strides[d];
      expected[j][off] = stored_value(y[j], c.out[j].dtype);
      written[j][off] = true;
    }
    for (int d = rank - 1; d >= 0; --d) {
      if (++coord[d] < c.shape[d]) break;
      coord[d] = 0;
    }
  }

  for (int j = 0; j < NOut; ++j) {
    const std::vector<uint8_t> got =
        c.in_place && j == 0 ? in_dev[0].download() : out_dev[j].download();
    const int dtype = c.out[j].dtype;
    const int bytes = dtype_bytes(dtype);
    std::vector<double> actual, want;
    for (size_t i = 0; i < written[j].size(); ++i) {
      if (!written[j][i]) {
        EXPECT_EQ(0, std::memcmp(&got[i * bytes], &out_initial[j][i * bytes], bytes))
            << "output " << j << " element " << i << " outside the index space was modified";
        continue;
      }
      actual.push_back(read_host(got, dtype, static_cast<int64_t>(i)));
      want.push_back(expected[j][i]);
    }
    const bool exact = dtype != kDtypeFloat32 && dtype != kDtypeFloat64;
    EXPECT_TRUE(testing::all_close(actual, want, exact ? Tolerance{} : c.tol))
        << "output " << j << " (dtype " << dtype << ")";
  }
}

// Test listings show the case name instead of the parameter's bytes.
void PrintTo(const ElementwiseCase& c, std::ostream* os) {
  *os << c.name;
}

class ElementwiseTest : public ::testing::TestWithParam<ElementwiseCase> {};

TEST_P(ElementwiseTest, MatchesReference) {
  REQUIRE_GPU();
  const ElementwiseCase& c = GetParam();
  switch (c.fn) {
    case Fn::affine:
      run_case<2, 1>(c, Affine{});
      break;
    case Fn::fma_max:
      run_case<3, 2>(c, FmaMax{});
      break;
    case Fn::fill:
      run_case<0, 1>(c, Fill{});
      break;
    case Fn::copy:
      run_case<1, 1>(c, Copy{});
      break;
    case Fn::where:
      run_case<3, 1>(c, Where{});
      break;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ElementwiseTest, ::testing::ValuesIn(cases()),
                         testing::case_name<ElementwiseCase>);

TEST(Elementwise, RejectsBadArguments) {
  REQUIRE_GPU();
  DeviceBuffer<float> a(16), y(16);
  const int64_t shape[2] = {4, 4};
  TensorOperand in[1] = {{a.data(), kDtypeFloat32, 0, {4, 1}}};
  OutOperand out[1] = {{y.data(), kDtypeFloat32, 0, {4, 1}}};
  EXPECT_EQ(launch_elementwise(Copy{}, in, out, kMaxRank + 1, shape, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(launch_elementwise(Copy{}, in, out, 2, shape, nullptr, 100), cudaErrorInvalidValue);
  OutOperand overlapping[1] = {{y.data(), kDtypeFloat32, 0, {0, 1}}};
  EXPECT_EQ(launch_elementwise(Copy{}, in, overlapping, 2, shape, nullptr), cudaErrorInvalidValue);
  TensorOperand half[1] = {{a.data(), 2 /* float16 */, 0, {4, 1}}};
  EXPECT_EQ(launch_elementwise(Copy{}, half, out, 2, shape, nullptr), cudaErrorInvalidValue);
  ASSERT_CUDA(cudaGetLastError());
}

// Index spaces past 2^31 elements: the 64-bit strided path (uint8) and the 64-bit vector4 path
// (float32, 2^31 + 7 elements: a tail too). Checks slices at the start, around 2^31 and at the end.
bool enough_memory(size_t bytes) {
  size_t free_bytes = 0, total = 0;
  return cudaMemGetInfo(&free_bytes, &total) == cudaSuccess && free_bytes > bytes + (1ull << 30);
}

template <class T>
std::vector<T> download_slice(const T* device, int64_t begin, int64_t count) {
  std::vector<T> host(static_cast<size_t>(count));
  EXPECT_EQ(cudaMemcpy(host.data(), device + begin, count * sizeof(T), cudaMemcpyDeviceToHost),
            cudaSuccess);
  return host;
}

TEST(Elementwise, LargeIndexSpaceStrided64) {
  REQUIRE_GPU();
  const int64_t n = (int64_t{1} << 31) + 64;
  if (!enough_memory(2 * static_cast<size_t>(n))) GTEST_SKIP() << "not enough device memory";
  DeviceBuffer<uint8_t> x(n), y(n);
  ASSERT_CUDA(cudaMemset(x.data(), 7, n));
  ASSERT_CUDA(cudaMemset(y.data(), 0, n));
  TensorOperand in[1] = {{x.data(), kDtypeUInt8, 0, {1}}};
  OutOperand out[1] = {{y.data(), kDtypeUInt8, 0, {1}}};
  ASSERT_CUDA(launch_elementwise(PlusOne{}, in, out, 1, &n, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  for (int64_t begin : {int64_t{0}, (int64_t{1} << 31) - 4096, n - 4096}) {
    const std::vector<uint8_t> got = download_slice(y.data(), begin, 4096);
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t v) { return v == 8; }))
        << "slice at " << begin;
  }
}

TEST(Elementwise, LargeIndexSpaceVector4) {
  REQUIRE_GPU();
  const int64_t n = (int64_t{1} << 31) + 7;
  if (!enough_memory(2 * sizeof(float) * static_cast<size_t>(n)))
    GTEST_SKIP() << "not enough device memory";
  DeviceBuffer<float> x(n), y(n);
  ASSERT_CUDA(cudaMemset(x.data(), 0, n * sizeof(float)));
  ASSERT_CUDA(cudaMemset(y.data(), 0xff, n * sizeof(float)));  // NaN canary
  TensorOperand in[1] = {{x.data(), kDtypeFloat32, 0, {1}}};
  OutOperand out[1] = {{y.data(), kDtypeFloat32, 0, {1}}};
  ASSERT_CUDA(launch_elementwise(PlusOne{}, in, out, 1, &n, nullptr));
  ASSERT_CUDA(cudaDeviceSynchronize());
  for (int64_t begin : {int64_t{0}, (int64_t{1} << 31) - 4096, n - 4096}) {
    const std::vector<float> got = download_slice(y.data(), begin, 4096);
    EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](float v) { return v == 1.0f; }))
        << "slice at " << begin;
  }
}

}  // namespace
}  // namespace stitch::kernels
