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
// The general path: one thread per output element, grid-stride, in NCDHW order or
// channels fastest (PoolShape::channels); every window is read straight from the input, each row of
// it with its loads in flight together (loads_in_flight.cuh), so the input is read once from DRAM
// (overlapping windows share their reads through L1/L2). Its per-output integer work (unravelling
// the index, three int64 windows, int64 load addressing per window element) is what bounds it: on
// GoogleNet's inception module the 3x3 stride-1 max pool over [10, 480, 224, 224] took 4.73 ms on
// an H100 against a 0.58 ms DRAM floor, ~400 integer instructions per output. So max and avg pools
// over h and w in NCDHW order (plan_pool_tile says which) take the tiled path: a block stages one
// output tile's input region in shared memory, each element loaded once, and computes the tile's
// windows from there in the same comparison and summation order, so its results are
// bit-identical. It too is bound by instruction issue (ncu, H100: ~80% SM throughput, 0.8 warp
// issues per scheduler-cycle, DRAM 16-28%), so its windows are whole (the region's cells outside
// the input padded, no clamping) and unrolled where the caller gives the kernel size; staging by
// cp.async instead, double-buffered, ran 4-19% slower. A max pool whose index no store reads
// (the store functor declares kStoresIndex = false), with a compile-time window, stride 1 or 2
// and no dilation, takes a third path, strips (pool_strip_kernel): no shared memory, each thread
// 4 x 4 outputs from its input rows read once, DRAM-bound (pool_bench, H100: GoogleNet's pool
// 0.97 ms against the tiled path's 1.83, SqueezeNet's first 0.79 against 1.37). No path
// allocates anything: CUDA-graph capturable.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

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

// What an average over the (non-empty) windows wd, wh, ww divides its sum by: the input cells it
// covers, or for avg the pool's divisor override or, with count_include_pad, its padded cells.
template <PoolKind Kind>
__host__ __device__ inline int64_t average_divisor(const PoolShape& s, const PoolWindow& wd,
                                                   const PoolWindow& wh, const PoolWindow& ww) {
  const int64_t counted = (wd.end - wd.start) * (wh.end - wh.start) * (ww.end - ww.start);
  if (Kind != PoolKind::avg) return counted;
  return s.divisor != 0        ? s.divisor
         : s.count_include_pad ? wd.cells * wh.cells * ww.cells
                               : counted;
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
    store(e, sum / static_cast<float>(average_divisor<Kind>(s, wd, wh, ww)), -1);
  }
}

// The tiled path's output tile and block. 16 x 32 outputs over 256 threads: a warp takes one
// 32-wide output row (coalesced stores; at stride 1 its shared-memory reads hit 32 consecutive
// banks), and each thread two outputs 8 rows apart that share their w window. A 3x3 stride-1 tile
// then stages 18 x 34 cells, 1.2 loads per output, and 16 rows keep small planes' tiles mostly busy
// (GoogleNet's 28 x 28 fills 77% of its two tiles).
inline constexpr int kPoolTileH = 16, kPoolTileW = 32, kPoolTileThreads = 256;
// The largest staged region, in floats: 32 KB, within the 48 KB of dynamic shared memory a launch
// may take without opting in. The region is sized per launch (dynamic, not a static 32 KB array)
// so that a 3x3 pool's 2.4 KB blocks do not reserve 32 KB each and cap residency at 7 blocks.
inline constexpr int64_t kPoolTileCells = 8192;
// Planes, strides and paddings below this keep the tiled kernel's in-plane positions and tile
// counts in int, its cheap arithmetic.
inline constexpr int64_t kPoolTileIndexLimit = int64_t{1} << 30;

struct PoolTilePlan {
  bool eligible = false;
  int64_t rows = 0, cols = 0;        // one output tile's input region
  int64_t tiles_h = 0, tiles_w = 0;  // tiles per plane
};

// Whether `kind` over `s` takes the tiled path, and its region and tile counts. Only max and avg
// (adaptive windows are not a fixed stride apart), in NCDHW order (channels-last loads along w are
// not contiguous), with the depth a unit dim (pad 0, so its window is the single d = 0), at least
// 4 x 8 outputs per plane (a 1-d pool's single row would leave 15 of a tile's 16 rows idle), and a
// region within kPoolTileCells.
__host__ __device__ inline PoolTilePlan plan_pool_tile(PoolKind kind, const PoolShape& s) {
  PoolTilePlan plan;
  if (kind != PoolKind::max && kind != PoolKind::avg) return plan;
  if (s.channels != 0) return plan;
  if (s.in[0] != 1 || s.out[0] != 1 || s.kernel[0] != 1 || s.pad[0] != 0) return plan;
  if (s.out[1] < 4 || s.out[2] < 8) return plan;
  if (s.in[1] * s.in[2] >= kPoolTileIndexLimit || s.out[1] * s.out[2] >= kPoolTileIndexLimit)
    return plan;
  int64_t extent[3] = {1, 1, 1};
  const int64_t tile[3] = {1, kPoolTileH, kPoolTileW};
  for (int dim = 1; dim < 3; ++dim) {
    // pool_window dilates max windows only.
    const int64_t dil = kind == PoolKind::max ? s.dilation[dim] : 1;
    // Bounded before multiplying, so the products below cannot overflow.
    if (s.stride[dim] < 1 || s.stride[dim] > kPoolTileCells || s.kernel[dim] < 1 ||
        s.kernel[dim] > kPoolTileCells || dil < 1 || dil > kPoolTileCells || s.pad[dim] < 0 ||
        s.pad[dim] >= kPoolTileIndexLimit)
      return plan;
    extent[dim] = (tile[dim] - 1) * s.stride[dim] + (s.kernel[dim] - 1) * dil + 1;
    if (extent[dim] > kPoolTileCells) return plan;
    if (s.out[dim] * s.stride[dim] + extent[dim] >= kPoolTileIndexLimit) return plan;
  }
  if (extent[1] * extent[2] > kPoolTileCells) return plan;
  plan.eligible = true;
  plan.rows = extent[1];
  plan.cols = extent[2];
  plan.tiles_h = (s.out[1] + kPoolTileH - 1) / kPoolTileH;
  plan.tiles_w = (s.out[2] + kPoolTileW - 1) / kPoolTileW;
  return plan;
}

// One dim of the tiled path's windows, in int (plan_pool_tile bounds every position): kernel
// size, stride, dilation (1 but for max), padding and input size.
struct TileDim {
  int kernel, stride, dilation, pad, in;

  // The first input position at or after `start` that a window stepping by `dilation` reaches
  // (pool_window's clamp), for the maximum's index.
  __device__ int first_inside(int start) const {
    return start >= 0 ? start : start + (-start + dilation - 1) / dilation * dilation;
  }
  // An average's window at output position `o`: the input cells it covers and its padded cells
  // (pool_window's counts).
  __device__ int2 average_counts(int o) const {
    const int start = o * stride - pad;
    const int end = min(start + kernel, in + pad);
    return {min(end, in) - max(start, 0), end - start};
  }
};

template <PoolKind Kind>
__device__ inline TileDim tile_dim(const PoolShape& s, int dim, int kernel) {
  return {kernel, static_cast<int>(s.stride[dim]),
          Kind == PoolKind::max ? static_cast<int>(s.dilation[dim]) : 1,
          static_cast<int>(s.pad[dim]), static_cast<int>(s.in[dim])};
}

// A tile's place: its plane, its first output row and column, its region's first input row and
// column (negative in the padding), and the region's row length.
struct TileOrigin {
  int64_t o;
  int oh0, ow0, h0, w0, cols;
};

// Stages the tile's region: each thread the cells thread, thread + kPoolTileThreads, ... (their
// row and column stepped, not divided out per cell), kLoadsInFlight loads at a time; `outside`
// where the region leaves the input.
template <class Load>
__device__ inline void stage_tile_region(const Load& load, const TileOrigin& t, int cells,
                                         const TileDim& dh, const TileDim& dw, float outside,
                                         float* region) {
  const int thread = static_cast<int>(threadIdx.x);
  const int step_rows = kPoolTileThreads / t.cols, step_cols = kPoolTileThreads % t.cols;
  int row = thread / t.cols, col = thread % t.cols;
  for (int i = thread; i < cells;) {
    float x[kLoadsInFlight];
    int at[kLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u) {
      const int h = t.h0 + row, w = t.w0 + col;
      x[u] = i < cells && h >= 0 && h < dh.in && w >= 0 && w < dw.in ? load(t.o, 0, h, w) : outside;
      at[u] = i;
      i += kPoolTileThreads;
      row += step_rows;
      col += step_cols;
      if (col >= t.cols) {
        col -= t.cols;
        ++row;
      }
    }
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u)
      if (at[u] < cells) region[at[u]] = x[u];
  }
}

// The maximum so far of a row-major walk over a window, and its input position: a cell replaces
// it when greater or NaN (pool_kernel's comparison).
struct TileMax {
  float value;
  int h, w;

  __device__ void take(float v, int vh, int vw) {
    if (v > value || v != v) {
      value = v;
      h = vh;
      w = vw;
    }
  }
  // Folding a window's rows' maxima in order is folding its cells: a row's result replaces the
  // window's exactly when its first cell to do so in the walk would have (the row's last NaN, or
  // its first greatest value when that is greater).
  __device__ void take(const TileMax& row) { take(row.value, row.h, row.w); }
};

// The maximum of one window row: kernel_w cells from `cell`, input row h, columns from w.
template <int KernelW>
__device__ inline TileMax row_max(const float* cell, const TileDim& dw, int h, int w) {
  TileMax m{-INFINITY, h, w};
#pragma unroll
  for (int j = 0; j < (KernelW > 0 ? KernelW : dw.kernel); ++j)
    m.take(cell[j * dw.dilation], h, w + j * dw.dilation);
  return m;
}

// A thread's max outputs: rows oh and oh + 1 of column ow (rh, rw: the first one's window in the
// region). At stride and dilation 1 along h with the window's height known, the two windows'
// KernelH + 1 rows are each reduced once and shared.
template <int KernelH, int KernelW, class Store>
__device__ inline void tile_max_outputs(const PoolShape& s, const TileOrigin& t,
                                        const float* region, const TileDim& dh, const TileDim& dw,
                                        int oh, int ow, int rh, int rw, const Store& store) {
  const int out_h = static_cast<int>(s.out[1]), out_w = static_cast<int>(s.out[2]);
  const int64_t plane_e = t.o * out_h * out_w;
  const int h = t.h0 + rh, w = t.w0 + rw;
  // pool_kernel's index before any cell wins: the clamped window's first cell.
  const int first_w = dw.first_inside(w);
  if constexpr (KernelH > 0) {
    if (dh.stride == 1 && dh.dilation == 1) {
      TileMax rows[KernelH + 1];
#pragma unroll
      for (int i = 0; i <= KernelH; ++i)
        rows[i] = row_max<KernelW>(region + (rh + i) * t.cols + rw, dw, h + i, w);
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        if (oh + k >= out_h) break;
        TileMax best{-INFINITY, dh.first_inside(h + k), first_w};
#pragma unroll
        for (int i = 0; i < KernelH; ++i)
          best.take(rows[k + i]);
        store(plane_e + (oh + k) * out_w + ow, best.value,
              static_cast<int64_t>(best.h) * dw.in + best.w);
      }
      return;
    }
  }
  for (int k = 0; k < 2 && oh + k < out_h; ++k) {
    const int rk = rh + k * dh.stride;
    TileMax best{-INFINITY, dh.first_inside(t.h0 + rk), first_w};
#pragma unroll
    for (int i = 0; i < (KernelH > 0 ? KernelH : dh.kernel); ++i)
      best.take(row_max<KernelW>(region + (rk + i * dh.dilation) * t.cols + rw, dw,
                                 t.h0 + rk + i * dh.dilation, w));
    store(plane_e + (oh + k) * out_w + ow, best.value,
          static_cast<int64_t>(best.h) * dw.in + best.w);
  }
}

// A thread's average outputs: rows oh and oh + 1 of column ow, summed in pool_kernel's order.
template <int KernelH, int KernelW, class Store>
__device__ inline void tile_avg_outputs(const PoolShape& s, const TileOrigin& t,
                                        const float* region, const TileDim& dh, const TileDim& dw,
                                        int oh, int ow, int rh, int rw, const Store& store) {
  const int out_h = static_cast<int>(s.out[1]), out_w = static_cast<int>(s.out[2]);
  const int64_t plane_e = t.o * out_h * out_w;
  const int2 w_counts = dw.average_counts(ow);
  for (int k = 0; k < 2 && oh + k < out_h; ++k) {
    const int64_t e = plane_e + (oh + k) * out_w + ow;
    const int2 h_counts = dh.average_counts(oh + k);
    if (h_counts.x <= 0 || w_counts.x <= 0) {
      store(e, 0.0f, -1);
      continue;
    }
    const float* window = region + (rh + k * dh.stride) * t.cols + rw;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < (KernelH > 0 ? KernelH : dh.kernel); ++i)
#pragma unroll
      for (int j = 0; j < (KernelW > 0 ? KernelW : dw.kernel); ++j)
        sum += window[i * t.cols + j];
    const int64_t divisor = s.divisor != 0        ? s.divisor
                            : s.count_include_pad ? int64_t{h_counts.y} * w_counts.y
                                                  : int64_t{h_counts.x} * w_counts.x;
    store(e, sum / static_cast<float>(divisor), -1);
  }
}

// The tiled path: grid-stride over (plane, tile row, tile column). The block stages the tile's
// input region (rows [h0, h0 + rows), columns [w0, w0 + cols)) in shared memory, cells outside
// the input holding what cannot change the result (-inf for max, 0 for avg), so every window is
// its full kernel_h x kernel_w cells there with no clamping: the same values in the same order
// as pool_kernel's clamped windows (a -inf never replaces the maximum, the comparison being
// strict; adding +0 leaves a sum that starts at +0 bit-identical), so the results are. Each
// thread computes two vertically adjacent outputs of one column. KernelH and KernelW: the
// window's size when known at compile time (its loops then unroll), else 0.
template <PoolKind Kind, int KernelH, int KernelW, class Load, class Store>
__global__ void __launch_bounds__(kPoolTileThreads)
    pool_tile_kernel(PoolShape s, PoolTilePlan plan, Load load, Store store) {
  static_assert(kPoolTileH * kPoolTileW == 2 * kPoolTileThreads, "two outputs per thread");
  constexpr bool kMax = Kind == PoolKind::max;
  extern __shared__ float region[];
  const int cells = static_cast<int>(plan.rows * plan.cols);
  const TileDim dh = tile_dim<Kind>(s, 1, KernelH > 0 ? KernelH : static_cast<int>(s.kernel[1]));
  const TileDim dw = tile_dim<Kind>(s, 2, KernelW > 0 ? KernelW : static_cast<int>(s.kernel[2]));
  const int out_w = static_cast<int>(s.out[2]);
  const int tiles_w = static_cast<int>(plan.tiles_w);
  const int64_t tiles_per_plane = plan.tiles_h * plan.tiles_w;
  const int64_t tiles = s.outer * tiles_per_plane;
  const int thread = static_cast<int>(threadIdx.x);
  const int lane_w = thread % kPoolTileW, lane_h = thread / kPoolTileW;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    TileOrigin t;
    t.o = tile / tiles_per_plane;
    const int rest = static_cast<int>(tile - t.o * tiles_per_plane);
    t.oh0 = rest / tiles_w * kPoolTileH;
    t.ow0 = rest % tiles_w * kPoolTileW;
    t.h0 = t.oh0 * dh.stride - dh.pad;
    t.w0 = t.ow0 * dw.stride - dw.pad;
    t.cols = static_cast<int>(plan.cols);
    stage_tile_region(load, t, cells, dh, dw, kMax ? -INFINITY : 0.0f, region);
    __syncthreads();
    const int oh = t.oh0 + 2 * lane_h, ow = t.ow0 + lane_w;
    if (oh < s.out[1] && ow < out_w) {
      // The first output's window starts at region row rh, column rw.
      const int rh = 2 * lane_h * dh.stride, rw = lane_w * dw.stride;
      if constexpr (kMax)
        tile_max_outputs<KernelH, KernelW>(s, t, region, dh, dw, oh, ow, rh, rw, store);
      else
        tile_avg_outputs<KernelH, KernelW>(s, t, region, dh, dw, oh, ow, rh, rw, store);
    }
    // The next tile's staging overwrites the region.
    __syncthreads();
  }
}

// The strip path: max pools whose maximum's index nobody reads, over h and w in NCDHW order, the
// window's size known at compile time, stride 1 or 2 on both dims, no dilation. Each thread takes
// kStripCols adjacent outputs of kStripRows rows and reads their input rows once each, straight
// from the input (the warp's loads of one row share their lines in L1): every input row's window
// maxima along w, then every output's maximum down its KernelH rows, positions outside the input
// -inf. About a dozen instructions per 3x3 stride-1 output against the tiled path's ~52: that path
// stays bound by instruction issue, this one by DRAM. The maxima are the same values (max.NaN:
// a NaN in the window wins; of +0 and -0 either may come out, as equal under comparison).
inline constexpr int kStripCols = 4, kStripRows = 4, kStripThreads = 256;

template <class Store, class = void>
struct StoresIndex : std::true_type {};
// A store functor declaring `static constexpr bool kStoresIndex = false` ignores the index.
template <class Store>
struct StoresIndex<Store, std::void_t<decltype(Store::kStoresIndex)>>
    : std::bool_constant<Store::kStoresIndex> {};

__host__ __device__ inline bool strip_eligible(const PoolShape& s) {
  if (s.channels != 0 || s.in[0] != 1 || s.out[0] != 1 || s.kernel[0] != 1 || s.pad[0] != 0)
    return false;
  if (s.stride[1] != s.stride[2] || s.stride[1] < 1 || s.stride[1] > 2) return false;
  if (s.dilation[1] != 1 || s.dilation[2] != 1 || s.pad[1] < 0 || s.pad[2] < 0) return false;
  // Every position and the strip counts in int.
  for (int dim = 1; dim < 3; ++dim)
    if (s.in[dim] + s.pad[dim] >= kPoolTileIndexLimit ||
        (s.out[dim] + kStripCols) * s.stride[dim] + s.kernel[dim] >= kPoolTileIndexLimit)
      return false;
  return true;
}

// NaN-propagating maximum (PTX max.NaN, sm_80 and later).
__device__ inline float max_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float m;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(m) : "f"(a), "f"(b));
  return m;
#else
  return a != a || b != b ? a + b : fmaxf(a, b);
#endif
}

template <int KernelH, int KernelW, int Stride, class Load, class Store>
__global__ void __launch_bounds__(kStripThreads)
    pool_strip_kernel(PoolShape s, int64_t strips, Load load, Store store) {
  constexpr int kInCols = (kStripCols - 1) * Stride + KernelW;
  constexpr int kInRows = (kStripRows - 1) * Stride + KernelH;
  const int in_h = static_cast<int>(s.in[1]), in_w = static_cast<int>(s.in[2]);
  const int out_h = static_cast<int>(s.out[1]), out_w = static_cast<int>(s.out[2]);
  const int groups_w = (out_w + kStripCols - 1) / kStripCols;
  const int strips_h = (out_h + kStripRows - 1) / kStripRows;
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < strips;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t column_strips = t / groups_w;
    const int ow0 = static_cast<int>(t - column_strips * groups_w) * kStripCols;
    const int64_t o = column_strips / strips_h;
    const int oh0 = static_cast<int>(column_strips - o * strips_h) * kStripRows;
    const int h0 = oh0 * Stride - static_cast<int>(s.pad[1]);
    const int w0 = ow0 * Stride - static_cast<int>(s.pad[2]);
    float row_max[kInRows][kStripCols];
    // Most strips read only inside the input: their loads go unchecked.
    const bool inside = h0 >= 0 && h0 + kInRows <= in_h && w0 >= 0 && w0 + kInCols <= in_w;
    auto reduce_rows = [&](auto checked) {
      constexpr bool kChecked = decltype(checked)::value;
#pragma unroll
      for (int r = 0; r < kInRows; ++r) {
        const int h = h0 + r;
        float x[kInCols];
#pragma unroll
        for (int c = 0; c < kInCols; ++c) {
          const int w = w0 + c;
          x[c] = !kChecked || (h >= 0 && h < in_h && w >= 0 && w < in_w) ? load(o, 0, h, w)
                                                                         : -INFINITY;
        }
#pragma unroll
        for (int j = 0; j < kStripCols; ++j) {
          float m = x[j * Stride];
#pragma unroll
          for (int k = 1; k < KernelW; ++k)
            m = max_nan(m, x[j * Stride + k]);
          row_max[r][j] = m;
        }
      }
    };
    if (inside)
      reduce_rows(std::false_type{});
    else
      reduce_rows(std::true_type{});
#pragma unroll
    for (int i = 0; i < kStripRows; ++i) {
      const int oh = oh0 + i;
      if (oh >= out_h) break;
#pragma unroll
      for (int j = 0; j < kStripCols; ++j) {
        if (ow0 + j >= out_w) break;
        float m = row_max[i * Stride][j];
#pragma unroll
        for (int k = 1; k < KernelH; ++k)
          m = max_nan(m, row_max[i * Stride + k][j]);
        store((o * out_h + oh) * out_w + ow0 + j, m, -1);
      }
    }
  }
}

template <int KernelH, int KernelW, class Load, class Store>
int launch_pool_strips(const PoolShape& s, Load load, Store store, cudaStream_t stream) {
  const int64_t strips = s.outer * ((s.out[1] + kStripRows - 1) / kStripRows) *
                         ((s.out[2] + kStripCols - 1) / kStripCols);
  int64_t grid = 0;
  const cudaError_t e = grid_stride_blocks(strips, kStripThreads, grid);
  if (e != cudaSuccess) return e;
  if (s.stride[1] == 1)
    pool_strip_kernel<KernelH, KernelW, 1>
        <<<static_cast<unsigned>(grid), kStripThreads, 0, stream>>>(s, strips, load, store);
  else
    pool_strip_kernel<KernelH, KernelW, 2>
        <<<static_cast<unsigned>(grid), kStripThreads, 0, stream>>>(s, strips, load, store);
  return cudaGetLastError();
}

}  // namespace detail

// Launches one pooling pass. Returns cudaErrorInvalidValue for a malformed shape (a size, kernel,
// stride or dilation below 1 where it is used, or a window other than KernelH x KernelW where they
// are given), else the launch's error. `block` sizes the per-element kernel only; `allow_tiles`
// false keeps every shape on it (tests compare the paths). KernelH, KernelW: a max or avg pool's
// window h and w sizes, when the caller knows them at compile time (the tiled kernel's window
// loops then unroll, and a max pool whose Store declares kStoresIndex = false may take strips);
// 0, read from the shape.
template <PoolKind Kind, int KernelH = 0, int KernelW = 0, class Load, class Store>
int launch_pool(const PoolShape& shape, Load load, Store store, cudaStream_t stream,
                int block = 256, bool allow_tiles = true) {
  if ((KernelH > 0 && shape.kernel[1] != KernelH) || (KernelW > 0 && shape.kernel[2] != KernelW))
    return cudaErrorInvalidValue;
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
  if constexpr (Kind == PoolKind::max && KernelH > 0 && KernelW > 0 &&
                !detail::StoresIndex<Store>::value)
    if (allow_tiles && detail::strip_eligible(shape))
      return detail::launch_pool_strips<KernelH, KernelW>(shape, load, store, stream);
  if constexpr (Kind == PoolKind::max || Kind == PoolKind::avg) {
    const detail::PoolTilePlan plan = detail::plan_pool_tile(Kind, shape);
    if (allow_tiles && plan.eligible) {
      const int64_t tiles = shape.outer * plan.tiles_h * plan.tiles_w;
      int64_t grid = 0;
      const cudaError_t e =
          grid_stride_blocks(tiles * detail::kPoolTileThreads, detail::kPoolTileThreads, grid);
      if (e != cudaSuccess) return e;
      const size_t bytes = static_cast<size_t>(plan.rows * plan.cols) * sizeof(float);
      detail::pool_tile_kernel<Kind, KernelH, KernelW>
          <<<static_cast<unsigned>(grid), detail::kPoolTileThreads, bytes, stream>>>(shape, plan,
                                                                                     load, store);
      return cudaGetLastError();
    }
  }
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
