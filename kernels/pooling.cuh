// Pooling over the 1 to 3 trailing spatial dims of an [outer, d, h, w] index space (outer: every
// leading dim, N·C; fewer spatial dims are size-1 dims on the left): max and average pooling with
// kernel, stride, padding and dilation (max), PyTorch's count_include_pad and divisor_override
// (avg), adaptive max and average pooling (windows from the input and output sizes). Ceil mode is
// already in the output sizes the caller passes. A generated load functor reads the input (any
// strides), a generated store functor writes each result:
//
//   struct Load  { __device__ float operator()(int64_t o, int64_t d, int64_t h, int64_t w) const;
//   }; struct Store { __device__ void operator()(int64_t e, float value, int64_t index) const; };
//
// e is the output's linear index ((o·OD + od)·OH + oh)·OW + ow; index is the maximum's flat spatial
// input index (d·H + h)·W + w, as PyTorch's max_pool*_with_indices and adaptive_max_pool* return
// it (-1 for average pools). NaN wins a max, as in PyTorch (the last NaN of the window).
//
// Upsampling runs through the same launch (issue 13): nearest (PyTorch's upsample_nearest*:
// source = min(floor(dst * scale), in - 1)) and bilinear over h and w (upsample_bilinear2d,
// align_corners either way), with `scale` the source step per output position exactly as PyTorch
// computes it in float (the planner passes it); the store gets index -1.
//
// One thread per output element, grid-stride, in NCDHW order or channels fastest (PoolShape::
// channels); every window is read straight from the input, each row of it with its loads in flight
// together (loads_in_flight.cuh), so the input is read once from DRAM (overlapping windows share
// their reads through L1/L2) and nothing is allocated: CUDA-graph capturable.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "loads_in_flight.cuh"
#include "runtime.cuh"

namespace stitch::kernels {

enum class PoolKind { max, avg, adaptive_max, adaptive_avg, nearest, bilinear };

struct PoolShape {
  int64_t outer = 1;
  int64_t in[3] = {1, 1, 1};  // d, h, w
  int64_t out[3] = {1, 1, 1};
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t pad[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  bool count_include_pad = true;  // avg
  int64_t divisor = 0;            // avg: divisor_override; 0 = none
  float scale[3] = {1, 1, 1};     // nearest, bilinear: source positions per output position
  bool align_corners = false;     // bilinear
  // The order threads take the outputs in: 0, NCDHW (e); C > 0, outer = N·C and channels fastest
  // (N, D, H, W, C), the order of a channels-last input, whose loads are then coalesced.
  int64_t channels = 0;
};

namespace detail {

// One spatial dim of one output's window: positions start, start + step, ... < end. `cells` is
// the avg pool's padded window size (what count_include_pad divides by).
struct PoolWindow {
  int64_t start, end, step, cells;
};

template <PoolKind Kind>
__host__ __device__ inline PoolWindow pool_window(const PoolShape& s, int dim, int64_t o) {
  const int64_t in = s.in[dim];
  if (Kind == PoolKind::adaptive_max || Kind == PoolKind::adaptive_avg) {
    const int64_t out = s.out[dim];
    const int64_t start = o * in / out;
    const int64_t end = ((o + 1) * in + out - 1) / out;
    return {start, end, 1, end - start};
  }
  int64_t start = o * s.stride[dim] - s.pad[dim];
  if (Kind == PoolKind::max) {
    const int64_t dil = s.dilation[dim];
    int64_t end = start + (s.kernel[dim] - 1) * dil + 1;
    if (end > in) end = in;
    while (start < 0)
      start += dil;
    return {start, end, dil, 0};
  }
  int64_t end = start + s.kernel[dim];
  if (end > in + s.pad[dim]) end = in + s.pad[dim];
  const int64_t cells = end - start;
  if (start < 0) start = 0;
  if (end > in) end = in;
  return {start, end, 1, cells};
}

__device__ inline int64_t nearest_source(const PoolShape& s, int dim, int64_t o) {
  const auto source = static_cast<int64_t>(floorf(static_cast<float>(o) * s.scale[dim]));
  return source < s.in[dim] - 1 ? source : s.in[dim] - 1;
}

// The two source positions of output position `o` along `dim` and their weights (PyTorch's
// area_pixel_compute_source_index, not cubic).
struct LinearTaps {
  int64_t i0, i1;
  float w0, w1;
};

__device__ inline LinearTaps linear_taps(const PoolShape& s, int dim, int64_t o) {
  const float position = static_cast<float>(o);
  float source =
      s.align_corners ? s.scale[dim] * position : s.scale[dim] * (position + 0.5f) - 0.5f;
  if (source < 0.0f) source = 0.0f;
  const auto i0 = static_cast<int64_t>(source);
  const float w1 = source - static_cast<float>(i0);
  return {i0, i0 < s.in[dim] - 1 ? i0 + 1 : i0, 1.0f - w1, w1};
}

template <PoolKind Kind, class Load>
__device__ inline float resample(const PoolShape& s, const Load& load, int64_t o,
                                 const int64_t (&position)[3]) {
  if (Kind == PoolKind::nearest)
    return load(o, nearest_source(s, 0, position[0]), nearest_source(s, 1, position[1]),
                nearest_source(s, 2, position[2]));
  const int64_t d = position[0];  // bilinear: the depth dim is a unit dim
  const LinearTaps h = linear_taps(s, 1, position[1]), w = linear_taps(s, 2, position[2]);
  return h.w0 * (w.w0 * load(o, d, h.i0, w.i0) + w.w1 * load(o, d, h.i0, w.i1)) +
         h.w1 * (w.w0 * load(o, d, h.i1, w.i0) + w.w1 * load(o, d, h.i1, w.i1));
}

// Index: uint32_t when every output index fits (the unravel divides by runtime sizes, several
// times cheaper in 32 bits), else int64_t.
template <PoolKind Kind, class Index, class Load, class Store>
__global__ void pool_kernel(PoolShape s, Index total, Load load, Store store) {
  constexpr bool kMax = Kind == PoolKind::max || Kind == PoolKind::adaptive_max;
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  const Index out_d = static_cast<Index>(s.out[0]), out_h = static_cast<Index>(s.out[1]);
  const Index out_w = static_cast<Index>(s.out[2]);
  const Index channels = static_cast<Index>(s.channels);
  for (Index t = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; t < total; t += step) {
    Index rest = t;
    Index c = 0;
    if (channels > 0) {
      c = rest % channels;
      rest /= channels;
    }
    int64_t position[3];
    position[2] = static_cast<int64_t>(rest % out_w);
    rest /= out_w;
    position[1] = static_cast<int64_t>(rest % out_h);
    rest /= out_h;
    position[0] = static_cast<int64_t>(rest % out_d);
    rest /= out_d;
    const int64_t o = static_cast<int64_t>(channels > 0 ? rest * channels + c : rest);
    const int64_t e =
        channels > 0
            ? ((o * s.out[0] + position[0]) * s.out[1] + position[1]) * s.out[2] + position[2]
            : static_cast<int64_t>(t);
    if constexpr (Kind == PoolKind::nearest || Kind == PoolKind::bilinear) {
      store(e, resample<Kind>(s, load, o, position), -1);
      continue;
    }
    const PoolWindow wd = pool_window<Kind>(s, 0, position[0]);
    const PoolWindow wh = pool_window<Kind>(s, 1, position[1]);
    const PoolWindow ww = pool_window<Kind>(s, 2, position[2]);
    if (kMax) {
      float best = -INFINITY;
      int64_t best_index = (wd.start * s.in[1] + wh.start) * s.in[2] + ww.start;
      for (int64_t d = wd.start; d < wd.end; d += wd.step)
        for (int64_t h = wh.start; h < wh.end; h += wh.step)
          for_each_strided(
              ww.start, ww.end, ww.step, [&](int64_t w) { return load(o, d, h, w); },
              [&](int64_t w, float v) {
                if (v > best || v != v) {
                  best = v;
                  best_index = (d * s.in[1] + h) * s.in[2] + w;
                }
              });
      store(e, best, best_index);
      continue;
    }
    if (wd.start >= wd.end || wh.start >= wh.end || ww.start >= ww.end) {
      store(e, 0.0f, -1);
      continue;
    }
    float sum = 0.0f;
    for (int64_t d = wd.start; d < wd.end; ++d)
      for (int64_t h = wh.start; h < wh.end; ++h)
        for_each_strided(
            ww.start, ww.end, 1, [&](int64_t w) { return load(o, d, h, w); },
            [&](int64_t, float v) { sum += v; });
    const int64_t counted = (wd.end - wd.start) * (wh.end - wh.start) * (ww.end - ww.start);
    int64_t divisor = counted;
    if (Kind == PoolKind::avg)
      divisor = s.divisor != 0        ? s.divisor
                : s.count_include_pad ? wd.cells * wh.cells * ww.cells
                                      : counted;
    store(e, sum / static_cast<float>(divisor), -1);
  }
}

}  // namespace detail

// Launches one pooling pass. Returns cudaErrorInvalidValue for a malformed shape (a size, kernel,
// stride or dilation below 1 where it is used), else the launch's error.
template <PoolKind Kind, class Load, class Store>
int launch_pool(const PoolShape& shape, Load load, Store store, cudaStream_t stream,
                int block = 256) {
  int64_t total = shape.outer;
  for (int dim = 0; dim < 3; ++dim) {
    if (shape.in[dim] < 1 || shape.out[dim] < 0) return cudaErrorInvalidValue;
    if (Kind == PoolKind::max || Kind == PoolKind::avg)
      if (shape.kernel[dim] < 1 || shape.stride[dim] < 1 || shape.dilation[dim] < 1)
        return cudaErrorInvalidValue;
    total *= shape.out[dim];
  }
  if (shape.outer < 0 || shape.channels < 0 ||
      (shape.channels > 0 && shape.outer % shape.channels != 0))
    return cudaErrorInvalidValue;
  if (Kind == PoolKind::bilinear && shape.in[0] != shape.out[0]) return cudaErrorInvalidValue;
  if (total == 0) return cudaSuccess;
  int64_t grid = 0;
  const cudaError_t e = grid_stride_blocks(total, block, grid);
  if (e != cudaSuccess) return e;
  // 32-bit indices while the grid-stride loop's last step stays below 2^32.
  if (total + grid * block < (int64_t{1} << 32))
    detail::pool_kernel<Kind, uint32_t><<<static_cast<unsigned>(grid), block, 0, stream>>>(
        shape, static_cast<uint32_t>(total), load, store);
  else
    detail::pool_kernel<Kind, int64_t>
        <<<static_cast<unsigned>(grid), block, 0, stream>>>(shape, total, load, store);
  return cudaGetLastError();
}

}  // namespace stitch::kernels
