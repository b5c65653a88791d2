// Elementwise kernels over an N-d index space: NIn inputs and NOut outputs of any supported dtype,
// each with its own strides (0 = broadcast), combined by a generated functor that sees floats.
//
//   struct Fn { __device__ void operator()(const float (&x)[NIn], float (&y)[NOut]) const; };
//   (NIn == 0: __device__ void operator()(float (&y)[NOut]) const.)
//
// launch_elementwise picks one of two kernels from a host-side plan (plan_elementwise, pure and
// tested on the CPU):
//   vector4  — after merging dimensions the space is [rows, cols] with cols % 4 == 0 (or one
//              dimension, any length: a scalar tail), every output and every streamed input
//              float32, contiguous and 16-byte aligned; inputs may also be broadcast along rows (a
//              bias), along columns (one value per row) or be a scalar. float4 loads and stores.
//   strided  — anything else: one thread per element, coordinates from the linear index with
//              32-bit magic-number division when the element count and every operand's offsets
//              fit in 31 bits (the common case), plain 64-bit division otherwise.
// Both are grid-stride loops over a grid of one full wave of resident blocks.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "runtime.cuh"

namespace stitch::kernels {

inline constexpr int kMaxRank = 8;

// stitch_dtype values (include/stitch/program.h). float16/bfloat16 are not supported: the fp32
// track never converts to half precision.
inline constexpr int kDtypeFloat32 = 0;
inline constexpr int kDtypeFloat64 = 1;
inline constexpr int kDtypeInt64 = 4;
inline constexpr int kDtypeInt32 = 5;
inline constexpr int kDtypeInt16 = 6;
inline constexpr int kDtypeInt8 = 7;
inline constexpr int kDtypeUInt8 = 8;
inline constexpr int kDtypeBool = 9;

// Bytes per element of a supported dtype; 0 for any other value.
__host__ __device__ constexpr int dtype_bytes(int dtype) {
  switch (dtype) {
    case kDtypeFloat32:
      return 4;
    case kDtypeFloat64:
      return 8;
    case kDtypeInt64:
      return 8;
    case kDtypeInt32:
      return 4;
    case kDtypeInt16:
      return 2;
    case kDtypeInt8:
      return 1;
    case kDtypeUInt8:
      return 1;
    case kDtypeBool:
      return 1;
    default:
      return 0;
  }
}

// An input: `data` + `offset` elements is the element at coordinate 0; strides are in elements, in
// the index space of the launch (0 = broadcast along that dimension; negative strides are allowed).
struct TensorOperand {
  const void* data;
  int dtype;
  int64_t offset;
  int64_t strides[kMaxRank];
};

// An output, laid out like TensorOperand. Every element of the index space must map to its own
// element (no stride 0 along a dimension longer than 1: launches reject it). An output may alias an
// input only with the identical layout (in-place).
struct OutOperand {
  void* data;
  int dtype;
  int64_t offset;
  int64_t strides[kMaxRank];
};

// Element i of a dtype array, as float. Integers round to nearest; bool is 0 or 1; float64 rounds
// to nearest (overflow gives inf).
__device__ inline float load_as_float(const void* p, int dtype, int64_t i) {
  switch (dtype) {
    case kDtypeFloat32:
      return static_cast<const float*>(p)[i];
    case kDtypeFloat64:
      return __double2float_rn(static_cast<const double*>(p)[i]);
    case kDtypeInt64:
      return static_cast<float>(static_cast<const long long*>(p)[i]);
    case kDtypeInt32:
      return static_cast<float>(static_cast<const int*>(p)[i]);
    case kDtypeInt16:
      return static_cast<float>(static_cast<const short*>(p)[i]);
    case kDtypeInt8:
      return static_cast<float>(static_cast<const signed char*>(p)[i]);
    case kDtypeUInt8:
      return static_cast<float>(static_cast<const unsigned char*>(p)[i]);
    case kDtypeBool:
      return static_cast<const unsigned char*>(p)[i] != 0 ? 1.0f : 0.0f;
    default:
      return __int_as_float(0x7fc00000);  // NaN; launches reject unknown dtypes
  }
}

// Stores v into element i of a dtype array, converting like PyTorch's CUDA casts: truncation
// toward zero for integers (saturating for 8/16/32-bit, uint8 through int64 as c10 does), NaN → 0
// except for int64 (the hardware's INT64_MIN), bool is v != 0 (NaN → true). No C++ float → int
// conversion is used, so out-of-range values are defined.
__device__ inline void store_from_float(void* p, int dtype, int64_t i, float v) {
  switch (dtype) {
    case kDtypeFloat32:
      static_cast<float*>(p)[i] = v;
      return;
    case kDtypeFloat64:
      static_cast<double*>(p)[i] = static_cast<double>(v);
      return;
    case kDtypeInt64:
      static_cast<long long*>(p)[i] = __float2ll_rz(v);
      return;
    case kDtypeInt32:
      static_cast<int*>(p)[i] = __float2int_rz(v);
      return;
    case kDtypeInt16: {
      const int t = __float2int_rz(v);
      static_cast<short*>(p)[i] = static_cast<short>(t < -32768 ? -32768 : (t > 32767 ? 32767 : t));
      return;
    }
    case kDtypeInt8: {
      const int t = __float2int_rz(v);
      static_cast<signed char*>(p)[i] =
          static_cast<signed char>(t < -128 ? -128 : (t > 127 ? 127 : t));
      return;
    }
    case kDtypeUInt8:
      static_cast<unsigned char*>(p)[i] =
          static_cast<unsigned char>(static_cast<unsigned long long>(__float2ll_rz(v)) & 0xffu);
      return;
    case kDtypeBool:
      static_cast<unsigned char*>(p)[i] = v != 0.0f ? 1 : 0;
      return;
    default:
      return;
  }
}

namespace detail {

// n / d for n < 2^31 and 1 <= d < 2^31 with a multiply-high and a shift instead of a division
// (Granlund & Montgomery; the same scheme as PyTorch's IntDivider).
struct FastDivider32 {
  uint32_t divisor = 1;
  uint32_t magic = 1;
  uint32_t shift = 0;

  FastDivider32() = default;
  explicit FastDivider32(uint32_t d) : divisor(d) {
    for (shift = 0; shift < 32; ++shift)
      if ((uint32_t{1} << shift) >= d) break;
    const uint64_t one = 1;
    magic = static_cast<uint32_t>(((one << 32) * ((one << shift) - d)) / d + 1);
  }
  __host__ __device__ uint32_t div(uint32_t n) const {
#ifdef __CUDA_ARCH__
    const uint32_t t = __umulhi(n, magic);
#else
    const uint32_t t = static_cast<uint32_t>((static_cast<uint64_t>(n) * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
};

struct PlainDivider64 {
  uint64_t divisor = 1;
  PlainDivider64() = default;
  explicit PlainDivider64(uint64_t d) : divisor(d) {}
  __host__ __device__ uint64_t div(uint64_t n) const { return n / divisor; }
};

// 32-bit or 64-bit index arithmetic.
template <bool Wide>
struct IndexTypes {
  using Index = uint32_t;
  using Offset = int32_t;
  using Divider = FastDivider32;
};
template <>
struct IndexTypes<true> {
  using Index = uint64_t;
  using Offset = int64_t;
  using Divider = PlainDivider64;
};

// The index space after dropping size-1 dimensions and merging dimensions that are contiguous for
// every operand: fewer divisions per element. Dimensions are outermost first.
template <int N>
struct CoalescedSpace {
  int rank = 0;
  int64_t shape[kMaxRank] = {};
  int64_t strides[N][kMaxRank] = {};
};

template <int N>
CoalescedSpace<N> coalesce(int rank, const int64_t* shape, const int64_t* const (&strides)[N]) {
  CoalescedSpace<N> out;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;
    bool merge = out.rank > 0;
    for (int j = 0; j < N && merge; ++j)
      merge = out.strides[j][out.rank - 1] == strides[j][d] * shape[d];
    if (merge) {
      out.shape[out.rank - 1] *= shape[d];
      for (int j = 0; j < N; ++j)
        out.strides[j][out.rank - 1] = strides[j][d];
    } else {
      out.shape[out.rank] = shape[d];
      for (int j = 0; j < N; ++j)
        out.strides[j][out.rank] = strides[j][d];
      ++out.rank;
    }
  }
  return out;
}

// How an input of the vector4 path is read, per float4 of the [rows, cols] space. Rows may be two
// dimensions, [outer, inner] (an NCHW tensor's [N, C] with cols = H·W): a per-channel operand is
// then read per row, at outer · outer_row_stride + inner · row_stride.
enum class VectorRead : uint8_t {
  full,        // its own [rows, cols] contiguous block: one float4
  per_column,  // a [cols] vector repeated over rows (a bias): one float4
  per_row,     // one value per row (strided by the row strides, any dtype): one scalar
  scalar,      // one value for the whole space (any dtype)
};

enum class ElementwisePath : uint8_t { empty, vector4, strided32, strided64 };

// Everything a launch needs, decided on the host from shapes, strides, dtypes and alignment.
template <int NIn, int NOut>
struct ElementwisePlan {
  static constexpr int N = NIn + NOut;
  ElementwisePath path = ElementwisePath::empty;
  bool wide_index = false;  // 64-bit index arithmetic (strided64, or vector4 past 2^31 elements)
  int64_t numel = 0;
  CoalescedSpace<N> space;
  // vector4 only: rows = outer rows x inner_rows.
  int64_t rows = 0, cols = 0, inner_rows = 1;
  VectorRead reads[NIn > 0 ? NIn : 1] = {};
  int64_t row_strides[NIn > 0 ? NIn : 1] = {};        // per inner row
  int64_t outer_row_strides[NIn > 0 ? NIn : 1] = {};  // per outer row
};

struct ElementwiseOptions {
  bool allow_vector = true;
  bool force_wide_index = false;  // tests: the 64-bit kernels on small tensors
};

inline bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// Validates operands and picks a path. `data` are the element-0 addresses (offsets applied);
// operands 0..NIn-1 are inputs, NIn.. outputs. Returns cudaSuccess or cudaErrorInvalidValue.
template <int NIn, int NOut>
cudaError_t plan_elementwise(const void* const (&data)[NIn + NOut], const int (&dtypes)[NIn + NOut],
                             const int64_t* const (&strides)[NIn + NOut], int rank,
                             const int64_t* shape, const ElementwiseOptions& options,
                             ElementwisePlan<NIn, NOut>& plan) {
  constexpr int N = NIn + NOut;
  plan = ElementwisePlan<NIn, NOut>{};
  if (rank < 0 || rank > kMaxRank || (rank > 0 && shape == nullptr)) return cudaErrorInvalidValue;
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) {
    if (shape[d] < 0) return cudaErrorInvalidValue;
    if (__builtin_mul_overflow(numel, shape[d], &numel)) return cudaErrorInvalidValue;
  }
  for (int j = 0; j < N; ++j)
    if (dtype_bytes(dtypes[j]) == 0 || (rank > 0 && strides[j] == nullptr))
      return cudaErrorInvalidValue;
  plan.numel = numel;
  if (numel == 0) return cudaSuccess;
  for (int j = 0; j < N; ++j)
    if (data[j] == nullptr) return cudaErrorInvalidValue;
  for (int j = NIn; j < N; ++j)
    for (int d = 0; d < rank; ++d)
      if (shape[d] > 1 && strides[j][d] == 0) return cudaErrorInvalidValue;

  plan.space = coalesce<N>(rank, shape, strides);
  const CoalescedSpace<N>& s = plan.space;

  // Offsets reachable by each operand, for the index width (and as an overflow check).
  bool offsets_fit_32 = true;
  for (int j = 0; j < N; ++j) {
    int64_t low = 0, high = 0;
    for (int d = 0; d < s.rank; ++d) {
      int64_t reach = 0;
      if (__builtin_mul_overflow(s.shape[d] - 1, s.strides[j][d], &reach))
        return cudaErrorInvalidValue;
      if (__builtin_add_overflow(reach < 0 ? low : high, reach, reach < 0 ? &low : &high))
        return cudaErrorInvalidValue;
    }
    if (low < INT32_MIN || high > INT32_MAX) offsets_fit_32 = false;
  }

  // vector4: [outer, inner_rows, cols] with every output and streamed input contiguous float32.
  // Coalesced dimensions all have sizes above 1.
  if (options.allow_vector && s.rank <= 3) {
    const int64_t cols = s.rank == 0 ? 1 : s.shape[s.rank - 1];
    const int64_t inner_rows = s.rank >= 2 ? s.shape[s.rank - 2] : 1;
    const int64_t outer_rows = s.rank == 3 ? s.shape[0] : 1;
    const int64_t rows = outer_rows * inner_rows;
    bool ok = rows == 1 || cols % 4 == 0;
    auto inner = [&](int j) { return s.rank == 0 ? int64_t{1} : s.strides[j][s.rank - 1]; };
    auto per_inner_row = [&](int j) { return s.rank >= 2 ? s.strides[j][s.rank - 2] : int64_t{0}; };
    auto per_outer_row = [&](int j) { return s.rank == 3 ? s.strides[j][0] : int64_t{0}; };
    auto row_major = [&](int j) {  // rows of cols elements, one after another
      return (inner_rows == 1 || per_inner_row(j) == cols) &&
             (outer_rows == 1 || per_outer_row(j) == inner_rows * cols);
    };
    auto same_for_every_row = [&](int j) { return per_inner_row(j) == 0 && per_outer_row(j) == 0; };
    for (int j = NIn; j < N && ok; ++j)
      ok = dtypes[j] == kDtypeFloat32 && aligned16(data[j]) && (cols == 1 || inner(j) == 1) &&
           row_major(j);
    for (int j = 0; j < NIn && ok; ++j) {
      const bool streamed_inner = cols == 1 || inner(j) == 1;
      VectorRead read;
      if (inner(j) == 0 && same_for_every_row(j)) {
        read = VectorRead::scalar;
      } else if (inner(j) == 0 || cols == 1) {
        read = VectorRead::per_row;
        plan.row_strides[j] = per_inner_row(j);
        plan.outer_row_strides[j] = per_outer_row(j);
      } else if (streamed_inner && row_major(j)) {
        read = VectorRead::full;
      } else if (streamed_inner && same_for_every_row(j)) {
        read = VectorRead::per_column;
      } else {
        ok = false;
        break;
      }
      if ((read == VectorRead::full || read == VectorRead::per_column) &&
          (dtypes[j] != kDtypeFloat32 || !aligned16(data[j])))
        ok = false;
      plan.reads[j] = read;
    }
    if (ok) {
      plan.path = ElementwisePath::vector4;
      plan.wide_index = numel > INT32_MAX || options.force_wide_index;
      plan.rows = rows;
      plan.cols = cols;
      plan.inner_rows = inner_rows;
      return cudaSuccess;
    }
  }
  const bool narrow = numel <= INT32_MAX && offsets_fit_32 && !options.force_wide_index;
  plan.path = narrow ? ElementwisePath::strided32 : ElementwisePath::strided64;
  plan.wide_index = !narrow;
  return cudaSuccess;
}

// Calls the functor; NIn == 0 functors may take only the outputs.
template <int NIn, int NOut, class Fn>
__device__ __forceinline__ void apply(const Fn& fn, const float (&x)[NIn > 0 ? NIn : 1],
                                      float (&y)[NOut]) {
  if constexpr (NIn == 0 && std::is_invocable_v<const Fn&, float(&)[NOut]>)
    fn(y);
  else
    fn(x, y);
}

template <int NIn, int NOut, bool Wide>
struct StridedArgs {
  using T = IndexTypes<Wide>;
  static constexpr int N = NIn + NOut;
  typename T::Index numel;
  int rank;
  // Innermost dimension first.
  typename T::Index sizes[kMaxRank];
  typename T::Divider dividers[kMaxRank];
  typename T::Offset strides[N][kMaxRank];
  const void* data[N];
  int dtypes[N];
};

template <int NIn, int NOut, bool Wide, class Fn>
__global__ void __launch_bounds__(1024)
    elementwise_strided_kernel(const Fn fn, const StridedArgs<NIn, NOut, Wide> a) {
  using Index = typename IndexTypes<Wide>::Index;
  using Offset = typename IndexTypes<Wide>::Offset;
  constexpr int N = NIn + NOut;
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index i = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.numel;
       i += step) {
    Offset offsets[N] = {};
    Index rest = i;
#pragma unroll
    for (int d = 0; d < kMaxRank; ++d) {
      if (d == a.rank) break;
      Index coordinate = rest;
      if (d + 1 < a.rank) {
        const Index q = a.dividers[d].div(rest);
        coordinate = rest - q * a.sizes[d];
        rest = q;
      }
#pragma unroll
      for (int j = 0; j < N; ++j)
        offsets[j] += static_cast<Offset>(coordinate) * a.strides[j][d];
    }
    float x[NIn > 0 ? NIn : 1] = {};
    float y[NOut];
#pragma unroll
    for (int j = 0; j < NIn; ++j)
      x[j] = load_as_float(a.data[j], a.dtypes[j], offsets[j]);
    apply<NIn, NOut>(fn, x, y);
#pragma unroll
    for (int j = 0; j < NOut; ++j)
      store_from_float(const_cast<void*>(a.data[NIn + j]), a.dtypes[NIn + j], offsets[NIn + j],
                       y[j]);
  }
}

template <int NIn, int NOut, bool Wide>
struct VectorArgs {
  using T = IndexTypes<Wide>;
  typename T::Index vectors;     // float4s in the space: rows * cols / 4 (rounded down)
  typename T::Divider cols4;     // cols / 4 (1 when rows == 1: the row is then 0)
  typename T::Divider inner_rows;  // a row's outer index: row / inner_rows
  typename T::Index tail_begin;  // first element past the float4s (rows == 1 only)
  typename T::Index numel;
  const void* in[NIn > 0 ? NIn : 1];
  int in_dtypes[NIn > 0 ? NIn : 1];
  VectorRead reads[NIn > 0 ? NIn : 1];
  int64_t row_strides[NIn > 0 ? NIn : 1];
  int64_t outer_row_strides[NIn > 0 ? NIn : 1];
  float* out[NOut];
};

template <int NIn, int NOut, bool Wide, class Fn>
__global__ void __launch_bounds__(1024)
    elementwise_vector4_kernel(const Fn fn, const VectorArgs<NIn, NOut, Wide> a) {
  using Index = typename IndexTypes<Wide>::Index;
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  const Index first = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (Index v = first; v < a.vectors; v += step) {
    const Index row = a.cols4.div(v);
    const Index column4 = v - row * a.cols4.divisor;
    float4 in4[NIn > 0 ? NIn : 1];
#pragma unroll
    for (int j = 0; j < NIn; ++j) {
      switch (a.reads[j]) {
        case VectorRead::full:
          in4[j] = static_cast<const float4*>(a.in[j])[v];
          break;
        case VectorRead::per_column:
          in4[j] = static_cast<const float4*>(a.in[j])[column4];
          break;
        case VectorRead::per_row: {
          const Index outer = a.inner_rows.div(row);
          const Index inner = row - outer * a.inner_rows.divisor;
          const float s = load_as_float(a.in[j], a.in_dtypes[j],
                                        static_cast<int64_t>(outer) * a.outer_row_strides[j] +
                                            static_cast<int64_t>(inner) * a.row_strides[j]);
          in4[j] = make_float4(s, s, s, s);
          break;
        }
        default: {
          const float s = load_as_float(a.in[j], a.in_dtypes[j], 0);
          in4[j] = make_float4(s, s, s, s);
          break;
        }
      }
    }
    float4 out4[NOut];
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      float x[NIn > 0 ? NIn : 1] = {};
      float y[NOut];
#pragma unroll
      for (int j = 0; j < NIn; ++j)
        x[j] = reinterpret_cast<const float*>(&in4[j])[lane];
      apply<NIn, NOut>(fn, x, y);
#pragma unroll
      for (int j = 0; j < NOut; ++j)
        reinterpret_cast<float*>(&out4[j])[lane] = y[j];
    }
#pragma unroll
    for (int j = 0; j < NOut; ++j)
      reinterpret_cast<float4*>(a.out[j])[v] = out4[j];
  }
  // The last numel % 4 elements of a one-row space, one per thread.
  const Index e = a.tail_begin + first;
  if (first < a.numel - a.tail_begin) {
    float x[NIn > 0 ? NIn : 1] = {};
    float y[NOut];
#pragma unroll
    for (int j = 0; j < NIn; ++j) {
      const bool streamed = a.reads[j] == VectorRead::full || a.reads[j] == VectorRead::per_column;
      x[j] = load_as_float(a.in[j], a.in_dtypes[j], streamed ? static_cast<int64_t>(e) : 0);
    }
    apply<NIn, NOut>(fn, x, y);
#pragma unroll
    for (int j = 0; j < NOut; ++j)
      a.out[j][e] = y[j];
  }
}

template <int NIn, int NOut, class Fn>
int run_vector4(const Fn& fn, const ElementwisePlan<NIn, NOut>& plan,
                const void* const (&data)[NIn + NOut], const int (&dtypes)[NIn + NOut],
                cudaStream_t stream, int block) {
  const int64_t vectors = plan.rows * (plan.cols / 4);
  const int64_t tail_begin = vectors * 4;
  int64_t grid = 0;
  cudaError_t e = grid_stride_blocks(vectors > 0 ? vectors : 1, block, grid);
  if (e != cudaSuccess) return e;
  auto fill = [&](auto& a) {
    using Index = decltype(a.vectors);
    using Divider = decltype(a.cols4);
    a.vectors = static_cast<Index>(vectors);
    // One row: every float4 is in row 0, so divide by something larger than any index.
    a.cols4 =
        Divider(static_cast<Index>(plan.rows > 1 ? plan.cols / 4 : (vectors > 0 ? vectors : 1)));
    a.inner_rows = Divider(static_cast<Index>(plan.inner_rows));
    a.tail_begin = static_cast<Index>(tail_begin);
    a.numel = static_cast<Index>(plan.numel);
    for (int j = 0; j < NIn; ++j) {
      a.in[j] = data[j];
      a.in_dtypes[j] = dtypes[j];
      a.reads[j] = plan.reads[j];
      a.row_strides[j] = plan.row_strides[j];
      a.outer_row_strides[j] = plan.outer_row_strides[j];
    }
    for (int j = 0; j < NOut; ++j)
      a.out[j] = static_cast<float*>(const_cast<void*>(data[NIn + j]));
  };
  // 32-bit when the float4 count and the tail fit the fast divider's domain (numel < 2^31).
  if (!plan.wide_index) {
    VectorArgs<NIn, NOut, false> a{};
    fill(a);
    elementwise_vector4_kernel<NIn, NOut, false, Fn>
        <<<static_cast<unsigned>(grid), block, 0, stream>>>(fn, a);
  } else {
    VectorArgs<NIn, NOut, true> a{};
    fill(a);
    elementwise_vector4_kernel<NIn, NOut, true, Fn>
        <<<static_cast<unsigned>(grid), block, 0, stream>>>(fn, a);
  }
  return cudaGetLastError();
}

template <int NIn, int NOut, bool Wide, class Fn>
int run_strided(const Fn& fn, const ElementwisePlan<NIn, NOut>& plan,
                const void* const (&data)[NIn + NOut], const int (&dtypes)[NIn + NOut],
                cudaStream_t stream, int block) {
  using T = IndexTypes<Wide>;
  constexpr int N = NIn + NOut;
  StridedArgs<NIn, NOut, Wide> a{};
  a.numel = static_cast<typename T::Index>(plan.numel);
  a.rank = plan.space.rank;
  for (int d = 0; d < a.rank; ++d) {
    const int from = a.rank - 1 - d;  // innermost first
    a.sizes[d] = static_cast<typename T::Index>(plan.space.shape[from]);
    a.dividers[d] = typename T::Divider(a.sizes[d]);
    for (int j = 0; j < N; ++j)
      a.strides[j][d] = static_cast<typename T::Offset>(plan.space.strides[j][from]);
  }
  for (int j = 0; j < N; ++j) {
    a.data[j] = data[j];
    a.dtypes[j] = dtypes[j];
  }
  int64_t grid = 0;
  const cudaError_t e = grid_stride_blocks(plan.numel, block, grid);
  if (e != cudaSuccess) return e;
  elementwise_strided_kernel<NIn, NOut, Wide, Fn>
      <<<static_cast<unsigned>(grid), block, 0, stream>>>(fn, a);
  return cudaGetLastError();
}

template <int NIn, int NOut, class Fn>
int launch_elementwise_with(const Fn& fn, const void* const (&data)[NIn + NOut],
                            const int (&dtypes)[NIn + NOut],
                            const int64_t* const (&strides)[NIn + NOut], int rank,
                            const int64_t* shape, cudaStream_t stream, int block,
                            const ElementwiseOptions& options) {
  static_assert(NIn >= 0 && NOut >= 1, "an elementwise launch writes at least one output");
  static_assert(std::is_trivially_copyable_v<Fn>, "functors are passed to kernels by value");
  if (block < 32 || block > 1024 || block % 32 != 0) return cudaErrorInvalidValue;
  ElementwisePlan<NIn, NOut> plan;
  const cudaError_t e =
      plan_elementwise<NIn, NOut>(data, dtypes, strides, rank, shape, options, plan);
  if (e != cudaSuccess) return e;
  switch (plan.path) {
    case ElementwisePath::empty:
      return cudaSuccess;
    case ElementwisePath::vector4:
      return run_vector4<NIn, NOut>(fn, plan, data, dtypes, stream, block);
    case ElementwisePath::strided32:
      return run_strided<NIn, NOut, false>(fn, plan, data, dtypes, stream, block);
    case ElementwisePath::strided64:
      return run_strided<NIn, NOut, true>(fn, plan, data, dtypes, stream, block);
  }
  return cudaErrorInvalidValue;
}

// Element-0 addresses, dtypes and stride pointers of the operands, inputs first.
template <int NIn, int NOut>
struct OperandViews {
  const void* data[NIn + NOut] = {};
  int dtypes[NIn + NOut] = {};
  const int64_t* strides[NIn + NOut] = {};

  template <class Operand>
  void set(int j, const Operand& op) {
    const int bytes = dtype_bytes(op.dtype);
    data[j] = op.data == nullptr
                  ? nullptr
                  : static_cast<const char*>(op.data) + op.offset * (bytes > 0 ? bytes : 1);
    dtypes[j] = op.dtype;
    strides[j] = op.strides;
  }
};

}  // namespace detail

// Runs y = fn(x) over every element of `shape` (rank 0..kMaxRank) on `stream`. `fn` is copied to
// the device (trivially copyable). block: threads per block, a multiple of 32 up to 1024.
// Returns cudaSuccess (0), cudaErrorInvalidValue for bad arguments (rank, negative sizes, unknown
// dtype, null data, an output with stride 0 along a dimension longer than 1, a bad block), or the
// launch's cudaError_t — as an int, ready for STITCH_CHECK_CUDA. An empty space launches nothing.
template <int NIn, int NOut, class Fn, std::enable_if_t<(NIn > 0), int> = 0>
int launch_elementwise(const Fn& fn, const TensorOperand (&in)[NIn], const OutOperand (&out)[NOut],
                       int rank, const int64_t* shape, cudaStream_t stream, int block = 256) {
  detail::OperandViews<NIn, NOut> v;
  for (int j = 0; j < NIn; ++j)
    v.set(j, in[j]);
  for (int j = 0; j < NOut; ++j)
    v.set(NIn + j, out[j]);
  return detail::launch_elementwise_with<NIn, NOut>(fn, v.data, v.dtypes, v.strides, rank, shape,
                                                    stream, block, detail::ElementwiseOptions{});
}

// No inputs (a fill): launch_elementwise<0, NOut>(fn, nullptr, out, ...) or
// launch_elementwise(fn, nullptr, out, ...). C++ has no zero-length arrays, hence nullptr.
template <int NIn = 0, int NOut, class Fn, std::enable_if_t<NIn == 0, int> = 0>
int launch_elementwise(const Fn& fn, std::nullptr_t, const OutOperand (&out)[NOut], int rank,
                       const int64_t* shape, cudaStream_t stream, int block = 256) {
  detail::OperandViews<0, NOut> v;
  for (int j = 0; j < NOut; ++j)
    v.set(j, out[j]);
  return detail::launch_elementwise_with<0, NOut>(fn, v.data, v.dtypes, v.strides, rank, shape,
                                                  stream, block, detail::ElementwiseOptions{});
}

}  // namespace stitch::kernels
