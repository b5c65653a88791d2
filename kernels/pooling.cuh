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
// Two paths. The general one: one thread per output element, grid-stride, in NCDHW order or
// channels fastest (PoolShape::channels); every window is read straight from the input, each row of
// it with its loads in flight together (loads_in_flight.cuh), so the input is read once from DRAM
// (overlapping windows share their reads through L1/L2). Its per-output integer work (unravelling
// the index, three int64 windows, int64 load addressing per window element) is what bounds it: on
// GoogleNet's inception module the 3x3 stride-1 max pool over [10, 480, 224, 224] took 4.73 ms on
// an H100 against a 0.58 ms DRAM floor, ~400 integer instructions per output. So max and avg pools
// over h and w in NCDHW order (plan_pool_tile says which) take the tiled path: a block stages one
// output tile's input region in shared memory, each element loaded once, and computes the tile's
// windows from there with the same window logic, comparisons and summation order, so its results
// are bit-identical. Neither path allocates anything: CUDA-graph capturable.
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

// The tiled path: grid-stride over (plane, tile row, tile column). The block stages the tile's
// input region (rows [h0, h0 + rows), columns [w0, w0 + cols)) in shared memory, then each thread
// computes its outputs as pool_kernel does, reading the region instead of the input. Cells outside
// the input are zero and never read: pool_window clamps every window to the input.
template <PoolKind Kind, class Load, class Store>
__global__ void __launch_bounds__(kPoolTileThreads)
    pool_tile_kernel(PoolShape s, PoolTilePlan plan, Load load, Store store) {
  extern __shared__ float region[];
  const int rows = static_cast<int>(plan.rows), cols = static_cast<int>(plan.cols);
  const int cells = rows * cols;
  const int in_h = static_cast<int>(s.in[1]), in_w = static_cast<int>(s.in[2]);
  const int out_h = static_cast<int>(s.out[1]), out_w = static_cast<int>(s.out[2]);
  const int tiles_w = static_cast<int>(plan.tiles_w);
  const int64_t tiles_per_plane = plan.tiles_h * plan.tiles_w;
  const int64_t tiles = s.outer * tiles_per_plane;
  const int thread = static_cast<int>(threadIdx.x);
  // The staging walk takes cells thread, thread + kPoolTileThreads, ...; their (row, column) is
  // stepped, not divided out per cell.
  const int first_row = thread / cols, first_col = thread % cols;
  const int step_rows = kPoolTileThreads / cols, step_cols = kPoolTileThreads % cols;
  const int lane_w = thread % kPoolTileW, lane_h = thread / kPoolTileW;
  const PoolWindow wd = pool_window<Kind>(s, 0, 0);  // d = 0 alone (plan_pool_tile)
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t o = t / tiles_per_plane;
    const int rest = static_cast<int>(t - o * tiles_per_plane);
    const int oh0 = rest / tiles_w * kPoolTileH, ow0 = rest % tiles_w * kPoolTileW;
    const int h0 = oh0 * static_cast<int>(s.stride[1]) - static_cast<int>(s.pad[1]);
    const int w0 = ow0 * static_cast<int>(s.stride[2]) - static_cast<int>(s.pad[2]);
    int row = first_row, col = first_col;
    for (int i = thread; i < cells;) {
      float x[kLoadsInFlight];
      int at[kLoadsInFlight];
#pragma unroll
      for (int u = 0; u < kLoadsInFlight; ++u) {
        const int h = h0 + row, w = w0 + col;
        x[u] = i < cells && h >= 0 && h < in_h && w >= 0 && w < in_w ? load(o, 0, h, w) : 0.0f;
        at[u] = i;
        i += kPoolTileThreads;
        row += step_rows;
        col += step_cols;
        if (col >= cols) {
          col -= cols;
          ++row;
        }
      }
#pragma unroll
      for (int u = 0; u < kLoadsInFlight; ++u)
        if (at[u] < cells) region[at[u]] = x[u];
    }
    __syncthreads();
    const int ow = ow0 + lane_w;
    if (ow < out_w) {
      const PoolWindow ww = pool_window<Kind>(s, 2, ow);
      const int w_first = static_cast<int>(ww.start) - w0, w_end = static_cast<int>(ww.end) - w0;
      const int w_step = static_cast<int>(ww.step);
      for (int oh = oh0 + lane_h; oh < oh0 + kPoolTileH && oh < out_h;
           oh += kPoolTileThreads / kPoolTileW) {
        const PoolWindow wh = pool_window<Kind>(s, 1, oh);
        const int h_first = static_cast<int>(wh.start) - h0;
        const int h_end = static_cast<int>(wh.end) - h0, h_step = static_cast<int>(wh.step);
        const int64_t e = (o * s.out[1] + oh) * s.out[2] + ow;
        if (Kind == PoolKind::max) {
          float best = -INFINITY;
          int best_h = h_first, best_w = w_first;
          for (int h = h_first; h < h_end; h += h_step)
            for (int w = w_first; w < w_end; w += w_step) {
              const float v = region[h * cols + w];
              if (v > best || v != v) {
                best = v;
                best_h = h;
                best_w = w;
              }
            }
          store(e, best, static_cast<int64_t>(h0 + best_h) * s.in[2] + (w0 + best_w));
          continue;
        }
        if (wd.start >= wd.end || wh.start >= wh.end || ww.start >= ww.end) {
          store(e, 0.0f, -1);
          continue;
        }
        float sum = 0.0f;
        for (int h = h_first; h < h_end; ++h)
          for (int w = w_first; w < w_end; ++w)
            sum += region[h * cols + w];
        store(e, sum / static_cast<float>(average_divisor<Kind>(s, wd, wh, ww)), -1);
      }
    }
    // The next tile's staging overwrites the region.
    __syncthreads();
  }
}

}  // namespace detail

// Launches one pooling pass. Returns cudaErrorInvalidValue for a malformed shape (a size, kernel,
// stride or dilation below 1 where it is used), else the launch's error. `block` sizes the
// per-element kernel only; `allow_tiles` false keeps every shape on it (tests compare the paths).
template <PoolKind Kind, class Load, class Store>
int launch_pool(const PoolShape& shape, Load load, Store store, cudaStream_t stream,
                int block = 256, bool allow_tiles = true) {
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
  if constexpr (Kind == PoolKind::max || Kind == PoolKind::avg) {
    const detail::PoolTilePlan plan = detail::plan_pool_tile(Kind, shape);
    if (allow_tiles && plan.eligible) {
      const int64_t tiles = shape.outer * plan.tiles_h * plan.tiles_w;
      int64_t grid = 0;
      const cudaError_t e =
          grid_stride_blocks(tiles * detail::kPoolTileThreads, detail::kPoolTileThreads, grid);
      if (e != cudaSuccess) return e;
      const size_t bytes = static_cast<size_t>(plan.rows * plan.cols) * sizeof(float);
      detail::pool_tile_kernel<Kind>
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
