// Prefix scans (cumsum, cumprod) along the middle axis of an [outer, length, inner] index space:
// inclusive or exclusive, forward or reverse, accumulated in FP32. A generated load functor reads
// element (o, p, i) through the input's strides (a flipped input has negative ones; a fused
// prologue runs inside it), a generated store functor takes each scanned value (and runs the
// fused epilogue):
//
//   struct Load  { __device__ float operator()(int64_t o, int64_t p, int64_t i) const; };
//   struct Store { __device__ void operator()(int64_t o, int64_t p, int64_t i, float v) const; };
//
// y[o, p, i] = x[o, 0, i] op ... op x[o, p, i] (inclusive); exclusive leaves position p's own
// element out (the identity at the first position); reverse runs from p = length - 1 down to 0.
//
// Strategies (the Planner picks one, src/plan/kernel_choice.h, and the program passes it):
//   warp_rows (inner == 1) — a warp per row. The row goes by in steps of 32 consecutive positions
//     (lane l takes position base + l: coalesced, also reversed); each step is scanned with five
//     shuffles (Kogge-Stone) and combined with the carry of the steps before it, which lane 31
//     hands on. kSteps steps are loaded before any is scanned, so loads overlap the shuffles. The
//     order of the additions is a tree inside each 32-element step and the steps in order: the
//     structure of PyTorch's own innermost-dim CUDA scan (tensor_kernel_scan_innermost_dim:
//     32-element chunks, up- and down-sweep, carried in order), so over a long row the rounding
//     error grows as PyTorch's does (about sqrt(length / 32) carries' worth), far inside the fp32
//     track's bound.
//   columns (inner > 1) — a thread per (o, i) column walking p in order (sequential FP32, as
//     PyTorch's tensor_kernel_scan_outer_dim does); consecutive threads take consecutive i, so
//     each step's loads and stores are coalesced when the inner axis has unit stride.
// Rows and columns are independent: few long rows leave the GPU mostly idle (a decoupled
// look-back across blocks would fill it; no KernelBench shape needs it yet). Nothing is
// allocated, so launches are CUDA-graph capturable; a rerun gives identical bits.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime.cuh"

namespace stitch::kernels {

enum class ScanKind { sum, prod };
enum class ScanStrategy : int64_t { warp_rows = 0, columns = 1 };

namespace detail {

template <ScanKind Kind>
struct ScanCombine {
  static __host__ __device__ __forceinline__ float identity() {
    return Kind == ScanKind::sum ? 0.0f : 1.0f;
  }
  static __host__ __device__ __forceinline__ float apply(float before, float x) {
    return Kind == ScanKind::sum ? before + x : before * x;
  }
};

// Steps of 32 positions a warp loads before scanning them.
inline constexpr int kScanSteps = 4;

// Position of the t-th element visited along the axis.
__host__ __device__ __forceinline__ int64_t scan_position(int64_t t, int64_t length, bool reverse) {
  return reverse ? length - 1 - t : t;
}

template <ScanKind Kind, class Load, class Store>
__global__ void scan_warp_rows_kernel(int64_t rows, int64_t length, bool reverse, bool exclusive,
                                      const Load load, const Store store) {
  using C = ScanCombine<Kind>;
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = blockDim.x / 32;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * warps + threadIdx.x / 32;
  // `row` is the same on every lane of a warp, so every shuffle below is warp-uniform.
  for (int64_t row = first; row < rows; row += static_cast<int64_t>(gridDim.x) * warps) {
    float carry = C::identity();
    for (int64_t base = 0; base < length; base += 32 * kScanSteps) {
      float x[kScanSteps];
#pragma unroll
      for (int k = 0; k < kScanSteps; ++k) {
        const int64_t t = base + k * 32 + lane;
        x[k] = t < length ? load(row, scan_position(t, length, reverse), 0) : C::identity();
      }
#pragma unroll
      for (int k = 0; k < kScanSteps; ++k) {
        float s = x[k];
#pragma unroll
        for (int offset = 1; offset < 32; offset <<= 1) {
          const float earlier = __shfl_up_sync(kFull, s, offset);
          if (lane >= offset) s = C::apply(earlier, s);
        }
        const float before = __shfl_up_sync(kFull, s, 1);
        const float value =
            exclusive ? (lane == 0 ? carry : C::apply(carry, before)) : C::apply(carry, s);
        const int64_t t = base + k * 32 + lane;
        if (t < length) store(row, scan_position(t, length, reverse), 0, value);
        carry = C::apply(carry, __shfl_sync(kFull, s, 31));
      }
    }
  }
}

template <ScanKind Kind, class Load, class Store>
__global__ void scan_columns_kernel(int64_t outer, int64_t length, int64_t inner, bool reverse,
                                    bool exclusive, const Load load, const Store store) {
  using C = ScanCombine<Kind>;
  const int64_t columns = outer * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < columns;
       c += stride) {
    const int64_t o = c / inner, i = c % inner;
    float carry = C::identity();
    for (int64_t t = 0; t < length; ++t) {
      const int64_t p = scan_position(t, length, reverse);
      const float next = C::apply(carry, load(o, p, i));
      store(o, p, i, exclusive ? carry : next);
      carry = next;
    }
  }
}

}  // namespace detail

// Checks the launch (sizes, strategy, block) and runs it on `stream`. warp_rows needs inner == 1
// and a block that is a multiple of 32.
template <ScanKind Kind, class Load, class Store>
cudaError_t launch_scan(ScanStrategy strategy, int64_t outer, int64_t length, int64_t inner,
                        bool reverse, bool exclusive, const Load& load, const Store& store,
                        cudaStream_t stream, int block = 256) {
  if (outer < 0 || length < 0 || inner < 0 || block <= 0 || block > 1024)
    return cudaErrorInvalidValue;
  if (outer == 0 || length == 0 || inner == 0) return cudaSuccess;
  int64_t grid = 0;
  if (strategy == ScanStrategy::warp_rows) {
    if (inner != 1 || block % 32 != 0) return cudaErrorInvalidValue;
    const int64_t rows_per_block = block / 32;
    cudaError_t e = grid_stride_blocks(outer * 32, block, grid);
    if (e != cudaSuccess) return e;
    if (grid > (outer + rows_per_block - 1) / rows_per_block)
      grid = (outer + rows_per_block - 1) / rows_per_block;
    detail::scan_warp_rows_kernel<Kind><<<static_cast<unsigned>(grid), block, 0, stream>>>(
        outer, length, reverse, exclusive, load, store);
    return cudaGetLastError();
  }
  if (strategy != ScanStrategy::columns) return cudaErrorInvalidValue;
  cudaError_t e = grid_stride_blocks(outer * inner, block, grid);
  if (e != cudaSuccess) return e;
  detail::scan_columns_kernel<Kind><<<static_cast<unsigned>(grid), block, 0, stream>>>(
      outer, length, inner, reverse, exclusive, load, store);
  return cudaGetLastError();
}

}  // namespace stitch::kernels
