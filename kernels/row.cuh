// Fused row kernels over a [rows, cols] space: softmax / log-softmax, layer norm and RMS norm. The
// generated functors own the memory layout:
//
//   struct Load  { __device__ float operator()(int64_t row, int64_t col) const; };
//   struct Store { __device__ void operator()(int64_t row, int64_t col, float value) const; };
//
// Strategies (plan_row, pure, CPU-tested), chosen from cols:
//   warp       cols <= 1024: a warp per row, each lane keeps K = 1..32 values in registers; one
//              read and one write of the row.
//   block      cols <= 8192: a 512-thread block per row, K = 4..16 values per thread in registers.
//   loop       longer rows: a 512-thread block per row, two passes over global memory (softmax:
//              online max and sum in the first, so two reads instead of three), four loads in
//              flight per thread.
// Statistics are combined in a fixed order: results are reproducible bit for bit. The register
// paths compute layer-norm variance in two passes over the registers (mean first), the loop path
// with Welford/Chan; variance is biased (divides by cols), as in PyTorch.
//
// Rows are independent: few, very long rows use few SMs. For that shape a planner should prefer
// launch_reduce (which splits the reduce axis) followed by an elementwise launch.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "loads_in_flight.cuh"
#include "runtime.cuh"

namespace stitch::kernels {
namespace detail {

enum class RowOp : uint8_t { softmax, log_softmax, layer_norm, rms_norm };
enum class RowStrategy : uint8_t { warp, block, loop };

struct RowPlan {
  RowStrategy strategy = RowStrategy::warp;
  int per_thread = 1;  // K: values each thread keeps in registers (warp, block)
  int threads = 128;   // per block
};

inline constexpr int64_t kRowWarpMaxCols = 1024;
inline constexpr int kRowWarpThreads = 128;  // 4 rows per block
inline constexpr int kRowBlockThreads = 512;
inline constexpr int64_t kRowBlockMaxCols = 8192;  // 512 threads x 16 registers
inline constexpr int kRowLoopThreads = 512;

inline RowPlan plan_row(int64_t cols) {
  RowPlan plan;
  if (cols <= kRowWarpMaxCols) {
    plan.strategy = RowStrategy::warp;
    plan.threads = kRowWarpThreads;
    while (plan.per_thread * 32 < cols)
      plan.per_thread *= 2;
  } else if (cols <= kRowBlockMaxCols) {
    plan.strategy = RowStrategy::block;
    plan.threads = kRowBlockThreads;
    plan.per_thread = 4;
    while (plan.per_thread * kRowBlockThreads < cols)
      plan.per_thread *= 2;
  } else {
    plan.strategy = RowStrategy::loop;
    plan.threads = kRowLoopThreads;
    plan.per_thread = 0;
  }
  return plan;
}

struct RowArgs {
  int64_t rows;
  int64_t cols;
  float eps;
  const float* weight;  // [cols] or nullptr
  const float* bias;    // [cols] or nullptr
};

// Shuffles any trivially copyable value made of 4-byte words.
template <class T>
__device__ __forceinline__ T shuffle_down_words(const T& v, int delta) {
  static_assert(sizeof(T) % 4 == 0 && std::is_trivially_copyable_v<T>, "");
  unsigned words[sizeof(T) / 4];
  memcpy(words, &v, sizeof(T));
#pragma unroll
  for (int w = 0; w < static_cast<int>(sizeof(T) / 4); ++w)
    words[w] = __shfl_down_sync(0xffffffffu, words[w], delta);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}
template <class T>
__device__ __forceinline__ T shuffle_from_lane0(const T& v) {
  unsigned words[sizeof(T) / 4];
  memcpy(words, &v, sizeof(T));
#pragma unroll
  for (int w = 0; w < static_cast<int>(sizeof(T) / 4); ++w)
    words[w] = __shfl_sync(0xffffffffu, words[w], 0);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

// Every thread of the group (a warp, or the whole block) gets the combination of the group's
// values, computed once in a fixed order and broadcast, so all threads see the same bits even for
// combines that are not commutative bit for bit. `scratch` holds 32 T (block groups only).
template <bool Warp, class T, class Combine>
__device__ __forceinline__ T group_all_reduce(T v, Combine combine, T* scratch) {
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2)
    v = combine(v, shuffle_down_words(v, delta));
  if constexpr (Warp) {
    return shuffle_from_lane0(v);
  } else {
    const int warps = blockDim.x / 32;
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = v;
    __syncthreads();
    T total = scratch[0];
    for (int w = 1; w < warps; ++w)
      total = combine(total, scratch[w]);
    __syncthreads();  // scratch may be rewritten by the next reduction
    return total;
  }
}

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const {
    if (a != a) return a;
    if (b != b) return b;
    return a > b ? a : b;
  }
};

// Online softmax statistics: running max and the sum of exp(x - max).
struct MaxSum {
  float max;
  float sum;
};
struct MaxSumOp {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const {
    const float m = MaxOp{}(a.max, b.max);
    // A zero sum contributes nothing (and must not: -inf - -inf is NaN).
    const float sa = a.sum == 0.0f ? 0.0f : a.sum * expf(a.max - m);
    const float sb = b.sum == 0.0f ? 0.0f : b.sum * expf(b.max - m);
    return MaxSum{m, sa + sb};
  }
};

struct Welford {
  float mean;
  float m2;
  long long count;
};
struct WelfordOp {
  __device__ Welford operator()(Welford a, Welford b) const {
    if (b.count == 0) return a;
    if (a.count == 0) return b;
    const long long count = a.count + b.count;
    const float b_share = static_cast<float>(b.count) / static_cast<float>(count);
    const float delta = b.mean - a.mean;
    return Welford{a.mean + delta * b_share,
                   a.m2 + b.m2 + delta * delta * static_cast<float>(a.count) * b_share, count};
  }
};

template <RowOp Op>
__device__ __forceinline__ float row_output(float x, float stat_a, float stat_b, int64_t col,
                                            const RowArgs& a) {
  if constexpr (Op == RowOp::softmax) {
    return expf(x - stat_a) / stat_b;  // stat_a: max, stat_b: sum of exp
  } else if constexpr (Op == RowOp::log_softmax) {
    return (x - stat_a) - stat_b;  // stat_b: log of the sum
  } else if constexpr (Op == RowOp::layer_norm) {
    float y = (x - stat_a) * stat_b;  // stat_a: mean, stat_b: rstd
    if (a.weight != nullptr) y *= a.weight[col];
    if (a.bias != nullptr) y += a.bias[col];
    return y;
  } else {
    float y = x * stat_b;  // stat_b: rsqrt(mean square + eps)
    if (a.weight != nullptr) y *= a.weight[col];
    return y;
  }
}

// Rows whose values fit in registers: K values per thread, column = lane + k * width. Warp: a warp
// per row (grid-stride over rows by warps); otherwise a block per row.
template <RowOp Op, bool Warp, int K, class Load, class Store>
__global__ void __launch_bounds__(Warp ? kRowWarpThreads : kRowBlockThreads)
    row_registers_kernel(const Load load, const Store store, const RowArgs a) {
  __shared__ float scratch[32];
  const int lane = Warp ? static_cast<int>(threadIdx.x % 32) : static_cast<int>(threadIdx.x);
  const int width = Warp ? 32 : static_cast<int>(blockDim.x);
  const int64_t groups_per_block = Warp ? blockDim.x / 32 : 1;
  const int64_t first =
      static_cast<int64_t>(blockIdx.x) * groups_per_block + (Warp ? threadIdx.x / 32 : 0);
  const int64_t step = static_cast<int64_t>(gridDim.x) * groups_per_block;
  const float count = static_cast<float>(a.cols);
  for (int64_t row = first; row < a.rows; row += step) {
    float v[K];
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t col = lane + static_cast<int64_t>(k) * width;
      v[k] = col < a.cols ? load(row, col) : 0.0f;
    }
    float stat_a = 0.0f, stat_b = 0.0f;
    if constexpr (Op == RowOp::softmax || Op == RowOp::log_softmax) {
      float m = -__int_as_float(0x7f800000);
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (lane + k * width < a.cols) m = MaxOp{}(m, v[k]);
      m = group_all_reduce<Warp>(m, MaxOp{}, scratch);
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (lane + k * width < a.cols) s += expf(v[k] - m);
      s = group_all_reduce<Warp>(s, AddOp{}, scratch);
      stat_a = m;
      stat_b = Op == RowOp::softmax ? s : logf(s);
    } else if constexpr (Op == RowOp::layer_norm) {
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < K; ++k)
        s += v[k];  // padding is 0
      const float mean = group_all_reduce<Warp>(s, AddOp{}, scratch) / count;
      float q = 0.0f;
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (lane + k * width < a.cols) q += (v[k] - mean) * (v[k] - mean);
      const float var = group_all_reduce<Warp>(q, AddOp{}, scratch) / count;
      stat_a = mean;
      stat_b = rsqrtf(var + a.eps);
    } else {
      float q = 0.0f;
#pragma unroll
      for (int k = 0; k < K; ++k)
        q += v[k] * v[k];
      stat_b = rsqrtf(group_all_reduce<Warp>(q, AddOp{}, scratch) / count + a.eps);
    }
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t col = lane + static_cast<int64_t>(k) * width;
      if (col < a.cols) store(row, col, row_output<Op>(v[k], stat_a, stat_b, col, a));
    }
  }
}

// Rows too long for registers: a block per row, statistics in a first pass, outputs in a second,
// each with several loads in flight per thread (loads_in_flight.cuh).
template <RowOp Op, class Load, class Store>
__global__ void __launch_bounds__(kRowLoopThreads)
    row_loop_kernel(const Load load, const Store store, const RowArgs a) {
  __shared__ alignas(16) unsigned char scratch_bytes[32 * sizeof(Welford)];
  const int64_t cols = a.cols;
  const float count = static_cast<float>(cols);
  for (int64_t row = blockIdx.x; row < a.rows; row += gridDim.x) {
    const auto load_col = [&](int64_t col) { return load(row, col); };
    float stat_a = 0.0f, stat_b = 0.0f;
    if constexpr (Op == RowOp::softmax || Op == RowOp::log_softmax) {
      MaxSum ms{-__int_as_float(0x7f800000), 0.0f};
      for_each_strided(threadIdx.x, cols, blockDim.x, load_col, [&](int64_t, float x) {
        // -inf adds nothing. One expf per element except when the maximum moves; expf(x - x) is
        // 1, or NaN for x = +inf, which (like NaN inputs) makes the row NaN as in PyTorch.
        if (x == -__int_as_float(0x7f800000)) return;
        if (x > ms.max) {
          ms.sum = ms.sum * expf(ms.max - x) + expf(x - x);
          ms.max = x;
        } else {
          ms.sum += expf(x - ms.max);
        }
      });
      ms = group_all_reduce<false>(ms, MaxSumOp{}, reinterpret_cast<MaxSum*>(scratch_bytes));
      stat_a = ms.max;
      stat_b = Op == RowOp::softmax ? ms.sum : logf(ms.sum);
    } else if constexpr (Op == RowOp::layer_norm) {
      Welford w{0.0f, 0.0f, 0};
      for_each_strided(threadIdx.x, cols, blockDim.x, load_col, [&](int64_t, float x) {
        w.count += 1;
        const float delta = x - w.mean;
        w.mean += delta / static_cast<float>(w.count);
        w.m2 += delta * (x - w.mean);
      });
      w = group_all_reduce<false>(w, WelfordOp{}, reinterpret_cast<Welford*>(scratch_bytes));
      stat_a = w.mean;
      stat_b = rsqrtf(w.m2 / count + a.eps);
    } else {
      float q = 0.0f;
      for_each_strided(threadIdx.x, cols, blockDim.x, load_col,
                       [&](int64_t, float x) { q += x * x; });
      q = group_all_reduce<false>(q, AddOp{}, reinterpret_cast<float*>(scratch_bytes));
      stat_b = rsqrtf(q / count + a.eps);
    }
    for_each_strided(threadIdx.x, cols, blockDim.x, load_col, [&](int64_t col, float x) {
      store(row, col, row_output<Op>(x, stat_a, stat_b, col, a));
    });
  }
}

// Instantiates only the K values plan_row can pick for the strategy (each is a kernel to compile).
template <RowOp Op, bool Warp, class Load, class Store>
void launch_row_registers(int per_thread, unsigned grid, int threads, const Load& load,
                          const Store& store, const RowArgs& a, cudaStream_t stream) {
#define STITCH_ROW_CASE(K)                                                                        \
  case K:                                                                                         \
    row_registers_kernel<Op, Warp, K, Load, Store><<<grid, threads, 0, stream>>>(load, store, a); \
    return;
  if constexpr (Warp) {
    switch (per_thread) {
      STITCH_ROW_CASE(1)
      STITCH_ROW_CASE(2)
      STITCH_ROW_CASE(4)
      STITCH_ROW_CASE(8)
      STITCH_ROW_CASE(16)
      STITCH_ROW_CASE(32)
      default:
        return;
    }
  } else {
    switch (per_thread) {
      STITCH_ROW_CASE(4)
      STITCH_ROW_CASE(8)
      STITCH_ROW_CASE(16)
      default:
        return;
    }
  }
#undef STITCH_ROW_CASE
}

template <RowOp Op, class Load, class Store>
int launch_row(int64_t rows, int64_t cols, float eps, const float* weight, const float* bias,
               const Load& load, const Store& store, cudaStream_t stream) {
  static_assert(std::is_trivially_copyable_v<Load> && std::is_trivially_copyable_v<Store>,
                "functors are passed to kernels by value");
  if (rows < 0 || cols < 0) return cudaErrorInvalidValue;
  if (rows == 0 || cols == 0) return cudaSuccess;
  const RowPlan plan = plan_row(cols);
  const RowArgs args{rows, cols, eps, weight, bias};
  DeviceProperties props;
  const cudaError_t e = current_device_properties(props);
  if (e != cudaSuccess) return e;
  const int64_t resident =
      static_cast<int64_t>(props.sm_count) *
      (props.max_threads_per_sm / plan.threads > 0 ? props.max_threads_per_sm / plan.threads : 1);
  const int64_t rows_per_block = plan.strategy == RowStrategy::warp ? plan.threads / 32 : 1;
  int64_t blocks = (rows + rows_per_block - 1) / rows_per_block;
  if (blocks > resident) blocks = resident;
  const unsigned grid = static_cast<unsigned>(blocks);
  switch (plan.strategy) {
    case RowStrategy::warp:
      launch_row_registers<Op, true>(plan.per_thread, grid, plan.threads, load, store, args,
                                     stream);
      break;
    case RowStrategy::block:
      launch_row_registers<Op, false>(plan.per_thread, grid, plan.threads, load, store, args,
                                      stream);
      break;
    case RowStrategy::loop:
      row_loop_kernel<Op, Load, Store><<<grid, plan.threads, 0, stream>>>(load, store, args);
      break;
  }
  return cudaGetLastError();
}

}  // namespace detail

// softmax (log = false) or log_softmax (log = true) of each row, as PyTorch computes it: the row's
// maximum is subtracted first; a row with NaN, or with every element -inf, gives NaN.
// Returns cudaSuccess (0), cudaErrorInvalidValue (negative sizes) or the launch's cudaError_t.
template <class Load, class Store>
int launch_softmax(int64_t rows, int64_t cols, bool log, const Load& load, const Store& store,
                   cudaStream_t stream) {
  return log ? detail::launch_row<detail::RowOp::log_softmax>(rows, cols, 0.0f, nullptr, nullptr,
                                                              load, store, stream)
             : detail::launch_row<detail::RowOp::softmax>(rows, cols, 0.0f, nullptr, nullptr, load,
                                                          store, stream);
}

// y = (x - mean) * rsqrt(var + eps) * weight + bias over each row (biased variance); weight and
// bias are [cols] float32 device arrays or nullptr. Same return values as launch_softmax.
template <class Load, class Store>
int launch_layer_norm(int64_t rows, int64_t cols, float eps, const float* weight, const float* bias,
                      const Load& load, const Store& store, cudaStream_t stream) {
  return detail::launch_row<detail::RowOp::layer_norm>(rows, cols, eps, weight, bias, load, store,
                                                       stream);
}

// y = x * rsqrt(mean(x^2) + eps) * weight over each row; weight is [cols] or nullptr.
template <class Load, class Store>
int launch_rms_norm(int64_t rows, int64_t cols, float eps, const float* weight, const Load& load,
                    const Store& store, cudaStream_t stream) {
  return detail::launch_row<detail::RowOp::rms_norm>(rows, cols, eps, weight, nullptr, load, store,
                                                     stream);
}

}  // namespace stitch::kernels
