// The plan and the per-thread work of the tiled depthwise kernel (kernels/conv_depthwise.cuh):
// the variant and the tile a shape gets (plan_depthwise_conv2d), where a block's tile and input
// patch lie (depthwise_tile), the copy of the patch into shared memory (depthwise_load_patch) and a
// thread's outputs (depthwise_compute_tile). All are pure functions of their arguments,
// __host__ __device__: conv_depthwise_plan_test.cu runs whole launches block by block and thread
// by thread on the CPU (label unit); the kernel adds only __syncthreads between copy and compute.
//
// Tile: thread_rows x thread_cols threads, each rows_per_thread consecutive output rows by
// cols_per_thread columns thread_cols apart (so a warp's lanes take consecutive columns: coalesced
// stores, consecutive shared-memory words). Patch: the input rows and columns under the tile's
// windows, zeros outside the input; a shared row starts 16-byte aligned in the input when rows
// are (vector loads), `shift` columns before the first window.
#pragma once

#include <cuda_runtime.h>  // float2, float4, make_float2

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "plane_transform.cuh"
#include "unroll.cuh"

namespace stitch::kernels {

struct DepthwiseConv2dShape {
  int64_t batch = 1, channels = 0, multiplier = 1;  // out channels = channels * multiplier
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
};

namespace detail {

inline constexpr int kDepthwiseMaxThreads = 256;
inline constexpr int64_t kDepthwiseSharedBytes = 48 * 1024;  // no opt-in attribute needed
inline constexpr int kDepthwiseStripRows = 8;          // output rows per thread, fixed windows
inline constexpr int kDepthwiseAnyWindowRows = 4;      // ... any window (at most)
inline constexpr int kDepthwiseWholeRowThreads = 128;  // rows needing more threads are split ...
inline constexpr int kDepthwiseSplitRowThreads = 64;   // ... into tiles about this wide
inline constexpr int kDepthwiseLoadBatch = 4;          // loads a thread has in flight while copying

// A variant of the tiled kernel: a KH x KW window at stride S (rows and columns; a 1-row window:
// columns, rows at any stride), dilation 1, fixed at compile time. KH == 0: any window, stride
// and dilation, read at run time.
template <int KH, int KW, int S>
struct DepthwiseWindow {
  static constexpr bool kFixed = KH > 0;
  static constexpr int kKernelH = KH, kKernelW = KW, kStride = S;
  // A thread's outputs: a strip of consecutive rows (about kRows; any window: at most, its
  // accumulators are an array) by kCols columns. A fixed window walks its strip reading each input
  // row once for every open window it falls in; a 1-row window has no such reuse and takes 4
  // columns, sharing its weight registers.
  static constexpr int kRows = kFixed ? kDepthwiseStripRows : kDepthwiseAnyWindowRows;
  static constexpr int kCols = KH == 1 ? 4 : 1;
  // 2: a shared row holds the patch's even columns, then its odd ones, so that lanes reading
  // columns 2 apart read consecutive words (no bank conflicts).
  static constexpr int kPhases = S == 2 ? 2 : 1;
};
using DepthwiseAnyWindow = DepthwiseWindow<0, 0, 0>;

struct DepthwiseTiling {
  int rows_per_thread = 1, cols_per_thread = 1;  // a thread's strip of rows, its columns
  int thread_cols = 0, thread_rows = 0;          // threads across a tile, and row groups down it
  int threads = 0;                               // thread_cols * thread_rows in whole warps
  int tile_h = 0, tile_w = 0;                    // output rows and columns of a tile
  int tiles_h = 0, tiles_w = 0;                  // tiles down and across a plane
  int patch_h = 0, patch_w = 0;                  // input rows and columns under a tile's windows
  int pitch = 0;  // floats per shared row: patch_w (+ 3: the aligned start) rounded up to 4
  bool vector_loads = false;  // 16-byte copies: input rows 16-byte aligned
  int64_t shared_bytes = 0;
};

// The convolution in 32-bit sizes and its tiling: the tiled kernel's argument.
struct DepthwiseParams {
  int channels = 0, multiplier = 1, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  int dilation_h = 1, dilation_w = 1;
  DepthwiseTiling tiling;
};

// Calls visit(DepthwiseWindow<...>{}) with the variant that runs p; returns what visit returns.
template <class Visit>
auto visit_depthwise_window(const DepthwiseParams& p, Visit&& visit) {
  const bool two = p.stride_w == 2;
  if ((p.stride_w == 1 || two) && p.dilation_w == 1) {
    if (p.kernel_h == 1) {
      switch (p.kernel_w) {
        case 3:
          return two ? visit(DepthwiseWindow<1, 3, 2>{}) : visit(DepthwiseWindow<1, 3, 1>{});
        case 5:
          return two ? visit(DepthwiseWindow<1, 5, 2>{}) : visit(DepthwiseWindow<1, 5, 1>{});
        case 7:
          return two ? visit(DepthwiseWindow<1, 7, 2>{}) : visit(DepthwiseWindow<1, 7, 1>{});
        default:
          break;
      }
    } else if (p.kernel_h == p.kernel_w && p.stride_h == p.stride_w && p.dilation_h == 1) {
      switch (p.kernel_w) {
        case 3:
          return two ? visit(DepthwiseWindow<3, 3, 2>{}) : visit(DepthwiseWindow<3, 3, 1>{});
        case 5:
          return two ? visit(DepthwiseWindow<5, 5, 2>{}) : visit(DepthwiseWindow<5, 5, 1>{});
        case 7:
          return two ? visit(DepthwiseWindow<7, 7, 2>{}) : visit(DepthwiseWindow<7, 7, 1>{});
        default:
          break;
      }
    }
  }
  return visit(DepthwiseAnyWindow{});
}

// The fewest pieces of at most `most` that cover n, evenly sized: the size of one.
inline int depthwise_spread(int n, int most) {
  const int pieces = (n + most - 1) / most;
  return (n + pieces - 1) / pieces;
}

// Fills the tile, the patch and the shared bytes from thread_cols and thread_rows (64-bit: a huge
// stride or dilation gives a patch that does not fit, never an overflow).
inline void size_depthwise_tile(const DepthwiseParams& p, DepthwiseTiling& t) {
  t.threads = (t.thread_cols * t.thread_rows + 31) / 32 * 32;
  t.tile_h = t.thread_rows * t.rows_per_thread, t.tile_w = t.thread_cols * t.cols_per_thread;
  t.tiles_h = (p.out_h + t.tile_h - 1) / t.tile_h, t.tiles_w = (p.out_w + t.tile_w - 1) / t.tile_w;
  const int64_t patch_h =
      int64_t{t.tile_h - 1} * p.stride_h + int64_t{p.kernel_h - 1} * p.dilation_h + 1;
  const int64_t patch_w =
      int64_t{t.tile_w - 1} * p.stride_w + int64_t{p.kernel_w - 1} * p.dilation_w + 1;
  const int64_t pitch = (patch_w + (t.vector_loads ? 3 : 0) + 3) / 4 * 4;
  constexpr int64_t kLargest = kDepthwiseSharedBytes / sizeof(float);
  t.patch_h = static_cast<int>(std::min<int64_t>(patch_h, kLargest + 1));
  t.patch_w = static_cast<int>(std::min<int64_t>(patch_w, kLargest + 1));
  t.pitch = static_cast<int>(std::min<int64_t>(pitch, kLargest + 1));
  t.shared_bytes = int64_t{t.patch_h} * t.pitch * static_cast<int64_t>(sizeof(float));
}

// The tile for up to `rows` x `cols` outputs per thread and at most max_threads threads: whole
// rows when a row needs at most kDepthwiseWholeRowThreads threads (or the plane is one row group
// deep: all max_threads), else tiles about kDepthwiseSplitRowThreads threads wide; as many row
// groups as the threads allow; tiles and strips evenly sized. While the patch does not fit
// kDepthwiseSharedBytes it halves the row groups, then the width (down to a warp); shared_bytes
// says whether it fits.
inline DepthwiseTiling plan_depthwise_tiling(const DepthwiseParams& p, int rows, int cols,
                                             bool vector_loads, int max_threads) {
  DepthwiseTiling t;
  t.cols_per_thread = cols, t.vector_loads = vector_loads;
  const int groups = (p.out_h + rows - 1) / rows, across = (p.out_w + cols - 1) / cols;
  const int whole = groups == 1 ? max_threads : std::min(kDepthwiseWholeRowThreads, max_threads);
  const int split = groups == 1 ? max_threads : std::min(kDepthwiseSplitRowThreads, max_threads);
  int col_cap = across <= whole ? across : split, row_cap = max_threads;
  for (;;) {
    t.thread_cols = depthwise_spread(across, col_cap);
    t.thread_rows = depthwise_spread(groups, std::min(row_cap, max_threads / t.thread_cols));
    const int tiles_h = (groups + t.thread_rows - 1) / t.thread_rows;
    const int tile_rows = (p.out_h + tiles_h - 1) / tiles_h;
    t.rows_per_thread = (tile_rows + t.thread_rows - 1) / t.thread_rows;  // at most `rows`
    size_depthwise_tile(p, t);
    if (t.shared_bytes <= kDepthwiseSharedBytes) return t;
    if (t.thread_rows > 1)
      row_cap = t.thread_rows / 2;
    else if (t.thread_cols > 32)
      col_cap = t.thread_cols / 2;
    else
      return t;
  }
}

enum class DepthwisePath { fixed_window, any_window, simple };

struct DepthwisePlan {
  DepthwisePath path = DepthwisePath::simple;
  DepthwiseParams params;  // the tiled paths
  int64_t blocks = 0;      // planes x tiles: one tile per block
};

// Whether the tiled kernel's 32-bit indices hold: planes below 2^31 elements, every size, stride,
// padding and window extent below 2^30 (tile origins, patch rows and columns stay below 2^31).
inline bool depthwise_indices_fit_int32(const DepthwiseConv2dShape& s) {
  constexpr int64_t kLimit = int64_t{1} << 30;
  for (int64_t v : {s.batch, s.channels, s.multiplier, s.in_h, s.in_w, s.out_h, s.out_w, s.kernel_h,
                    s.kernel_w, s.stride_h, s.stride_w, s.pad_top, s.pad_left, s.pad_bottom,
                    s.pad_right, s.dilation_h, s.dilation_w})
    if (v >= kLimit) return false;
  return s.in_h * s.in_w < 2 * kLimit && s.out_h * s.out_w < 2 * kLimit &&
         s.in_h + s.pad_top + s.pad_bottom < kLimit && s.in_w + s.pad_left + s.pad_right < kLimit &&
         (s.kernel_h - 1) * s.dilation_h < kLimit && (s.kernel_w - 1) * s.dilation_w < kLimit;
}

// The kernel for a valid shape (depthwise_shape_problem): the tiled one with the variant
// visit_depthwise_window picks, 16-byte copies when x is 16-byte aligned and rows are (in_w % 4 ==
// 0), at most `block` threads (whole warps, 32..kDepthwiseMaxThreads); the simple one when the
// patch does not fit or an index might not fit 32 bits.
inline DepthwisePlan plan_depthwise_conv2d(const DepthwiseConv2dShape& s, bool x_aligned,
                                           int block) {
  DepthwisePlan plan;
  if (!depthwise_indices_fit_int32(s)) return plan;
  DepthwiseParams& p = plan.params;
  auto narrow = [](int64_t v) { return static_cast<int>(v); };
  p.channels = narrow(s.channels), p.multiplier = narrow(s.multiplier);
  p.in_h = narrow(s.in_h), p.in_w = narrow(s.in_w), p.out_h = narrow(s.out_h);
  p.out_w = narrow(s.out_w), p.kernel_h = narrow(s.kernel_h), p.kernel_w = narrow(s.kernel_w);
  p.stride_h = narrow(s.stride_h), p.stride_w = narrow(s.stride_w);
  p.pad_top = narrow(s.pad_top), p.pad_left = narrow(s.pad_left);
  p.dilation_h = narrow(s.dilation_h), p.dilation_w = narrow(s.dilation_w);
  const int max_threads = std::min(kDepthwiseMaxThreads, std::max(32, block / 32 * 32));
  const bool vector_loads = x_aligned && s.in_w % 4 == 0;
  const DepthwisePath path = visit_depthwise_window(p, [&](auto window) {
    using Window = decltype(window);
    p.tiling = plan_depthwise_tiling(p, Window::kRows, Window::kCols, vector_loads, max_threads);
    return Window::kFixed ? DepthwisePath::fixed_window : DepthwisePath::any_window;
  });
  const int64_t planes = s.batch * s.channels;  // < 2^60
  if (planes > INT_MAX) return plan;
  plan.blocks = planes * p.tiling.tiles_h * p.tiling.tiles_w;  // tiles < out_h * out_w < 2^31
  if (p.tiling.shared_bytes <= kDepthwiseSharedBytes && plan.blocks <= INT_MAX) plan.path = path;
  return plan;
}

// Block `block`'s tile: its input plane (n * channels + c; its output planes are in_plane *
// multiplier + m), its first output, and its patch's origin in the input.
struct DepthwiseTile {
  int in_plane = 0;
  int out_row = 0, out_col = 0;
  int in_row = 0, in_col = 0;  // shared row 0, column 0 (a multiple of 4 with vector loads)
  int shift = 0;               // in_col + shift: the first window's first column
};

__host__ __device__ inline DepthwiseTile depthwise_tile(const DepthwiseParams& p, unsigned block) {
  const DepthwiseTiling& t = p.tiling;
  const unsigned tiles = static_cast<unsigned>(t.tiles_h * t.tiles_w);
  const unsigned at = block % tiles, tile_row = at / t.tiles_w;
  DepthwiseTile tile;
  tile.in_plane = static_cast<int>(block / tiles);
  tile.out_row = static_cast<int>(tile_row) * t.tile_h;
  tile.out_col = static_cast<int>(at - tile_row * t.tiles_w) * t.tile_w;
  tile.in_row = tile.out_row * p.stride_h - p.pad_top;
  const int first_col = tile.out_col * p.stride_w - p.pad_left;
  tile.in_col = t.vector_loads ? first_col & ~3 : first_col;  // rounds negatives down too
  tile.shift = first_col - tile.in_col;
  return tile;
}

// Loads through the read-only cache on the device; plain reads in the CPU emulation.
__host__ __device__ inline void read_only_load(const float* at, float& value) {
#ifdef __CUDA_ARCH__
  value = __ldg(at);
#else
  value = *at;
#endif
}
__host__ __device__ inline void read_only_load(const float* at, float4& value) {
#ifdef __CUDA_ARCH__
  value = __ldg(reinterpret_cast<const float4*>(at));
#else
  std::memcpy(&value, at, sizeof value);
#endif
}

template <class Vector>
__host__ __device__ inline void store_vector(float* at, const Vector& value) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<Vector*>(at) = value;
#else
  std::memcpy(at, &value, sizeof value);
#endif
}

// Element `col` of a shared row (phases 2: even columns first, odd ones from `half` on).
template <int kPhases>
__host__ __device__ inline void store_patch(float* row, int col, int half, float value) {
  if constexpr (kPhases == 2)
    row[(col & 1) * half + (col >> 1)] = value;
  else
    row[col] = value;
}
template <int kPhases>
__host__ __device__ inline void store_patch(float* row, int col, int half, float4 value) {
  if constexpr (kPhases == 2) {  // col is a multiple of 4: 8-byte aligned halves
    store_vector(row + col / 2, make_float2(value.x, value.z));
    store_vector(row + half + col / 2, make_float2(value.y, value.w));
  } else {
    store_vector(row + col, value);
  }
}

// Thread `tid` copies chunks tid, tid + threads, ... of the row-major patch (kWidth floats each,
// wholly inside or outside the input: with vector loads in_col and in_w are multiples of 4),
// kDepthwiseLoadBatch loads issued before their stores; chunks inside are transformed on the way.
template <class Chunk, int kPhases, class Transform>
__host__ __device__ inline void depthwise_copy_patch(const DepthwiseParams& p,
                                                     const DepthwiseTile& tile,
                                                     const float* x_plane, int tid, float* patch,
                                                     const Transform& transform) {
  constexpr int kWidth = sizeof(Chunk) / sizeof(float);
  const DepthwiseTiling& t = p.tiling;
  const int per_row = (tile.shift + t.patch_w + kWidth - 1) / kWidth;
  const int row_step = t.threads / per_row, chunk_step = t.threads - row_step * per_row;
  int row = tid / per_row, chunk = tid - row * per_row;
  while (row < t.patch_h) {
    Chunk value[kDepthwiseLoadBatch];
    int row_at[kDepthwiseLoadBatch], col[kDepthwiseLoadBatch];
    bool inside[kDepthwiseLoadBatch];
    STITCH_UNROLL
    for (int u = 0; u < kDepthwiseLoadBatch; ++u) {
      row_at[u] = -1;
      inside[u] = false;
      if (row < t.patch_h) {
        const int in_row = tile.in_row + row, in_col = tile.in_col + chunk * kWidth;
        value[u] = Chunk{};
        inside[u] = in_row >= 0 && in_row < p.in_h && in_col >= 0 && in_col < p.in_w;
        if (inside[u]) read_only_load(x_plane + in_row * p.in_w + in_col, value[u]);
        row_at[u] = row * t.pitch, col[u] = chunk * kWidth;
      }
      row += row_step, chunk += chunk_step;
      if (chunk >= per_row) chunk -= per_row, ++row;
    }
    STITCH_UNROLL
    for (int u = 0; u < kDepthwiseLoadBatch; ++u) {
      if (row_at[u] < 0) continue;
      if (inside[u]) value[u] = transform_input(transform, tile.in_plane, value[u]);
      store_patch<kPhases>(patch + row_at[u], col[u], t.pitch / 2, value[u]);
    }
  }
}

template <int kPhases, class Transform = PlaneIdentity>
__host__ __device__ inline void depthwise_load_patch(const DepthwiseParams& p,
                                                     const DepthwiseTile& tile,
                                                     const float* x_plane, int tid, float* patch,
                                                     const Transform& transform = {}) {
  if (p.tiling.vector_loads)
    depthwise_copy_patch<float4, kPhases>(p, tile, x_plane, tid, patch, transform);
  else
    depthwise_copy_patch<float, kPhases>(p, tile, x_plane, tid, patch, transform);
}

// A fixed window walks the thread's strip of outputs down its column. The windows of `slots`
// consecutive outputs are open at once: each new input row is read from shared memory once and
// added to every open window it falls in (window row and slot known at compile time), so every
// output's taps arrive in window order; the first slot is then complete, stored, and the slots
// move up by one. 1-row windows: one slot, rows p.stride_h apart (any stride); otherwise
// p.stride_h == S.
template <class Window>
__host__ __device__ inline void depthwise_compute_fixed(const DepthwiseParams& p,
                                                        const DepthwiseTile& tile,
                                                        const float* patch, const float* w_k,
                                                        float* y_plane, int tid) {
  constexpr int kh = Window::kKernelH, kw = Window::kKernelW, s = Window::kStride;
  constexpr int slots = (kh + s - 1) / s, opening = kh - s;  // rows read before the first output
  const DepthwiseTiling& t = p.tiling;
  const int group = tid / t.thread_cols, lane_col = tid - group * t.thread_cols;
  const int first = group * t.rows_per_thread;      // the strip's first output row in the tile
  const int left = p.out_h - tile.out_row - first;  // the plane's rows from there on
  const int count = left < t.rows_per_thread ? left : t.rows_per_thread;
  if (group >= t.thread_rows || count <= 0) return;
  float weight[kh * kw];
  STITCH_UNROLL
  for (int e = 0; e < kh * kw; ++e)
    read_only_load(w_k + e, weight[e]);
  // Shared floats from one output's window to the next's; the strip's first window.
  const int output_step = p.stride_h * t.pitch;
  const float* strip = patch + first * output_step;
  STITCH_UNROLL
  for (int v = 0; v < Window::kCols; ++v) {
    const int col = lane_col + v * t.thread_cols;
    // Tap j of this column: shared column shift + col * s + j; stride 2 (two phases): even taps in
    // the phase of `shift`, odd ones in the other, j / 2 words on.
    int even = tile.shift + col, odd = even;
    if constexpr (Window::kPhases == 2) {
      even = (tile.shift & 1) * (t.pitch / 2) + (tile.shift >> 1) + col;
      odd = ((tile.shift + 1) & 1) * (t.pitch / 2) + ((tile.shift + 1) >> 1) + col;
    }
    float acc[slots] = {};
    // Adds input row `line` (window row r of the first open window) to every window it is in.
    auto add_row = [&](const float* line, int r) {
      float in[kw];
      STITCH_UNROLL
      for (int j = 0; j < kw; ++j)
        in[j] = Window::kPhases == 2 ? line[(j % 2 == 0 ? even : odd) + j / 2] : line[even + j];
      STITCH_UNROLL
      for (int a = 0; a < slots; ++a) {
        const int i = r - a * s;
        if (i >= 0 && i < kh) {
          STITCH_UNROLL
          for (int j = 0; j < kw; ++j)
            acc[a] = fmaf(in[j], weight[i * kw + j], acc[a]);
        }
      }
    };
    STITCH_UNROLL
    for (int r = 0; r < opening; ++r)
      add_row(strip + r * t.pitch, r);
    const int out_col = tile.out_col + col;
    float* out = y_plane + (tile.out_row + first) * p.out_w + out_col;
    for (int o = 0; o < count; ++o) {
      const float* window = strip + o * output_step;
      STITCH_UNROLL
      for (int q = opening < 0 ? -opening : 0; q < s; ++q)
        add_row(window + (opening + q) * t.pitch, opening + q);
      if (out_col < p.out_w) out[o * p.out_w] = acc[0];
      STITCH_UNROLL
      for (int a = 0; a + 1 < slots; ++a)
        acc[a] = acc[a + 1];
      acc[slots - 1] = 0.0f;
    }
  }
}

// Any window: taps in window order, each weight used for the thread's rows.
__host__ __device__ inline void depthwise_compute_any(const DepthwiseParams& p,
                                                      const DepthwiseTile& tile, const float* patch,
                                                      const float* w_k, float* y_plane, int tid) {
  constexpr int kRows = kDepthwiseAnyWindowRows;
  const DepthwiseTiling& t = p.tiling;
  const int group = tid / t.thread_cols, col = tid - group * t.thread_cols;
  if (group >= t.thread_rows) return;
  const int rows = t.rows_per_thread, row_step = p.stride_h * t.pitch;
  const float* first = patch + group * rows * row_step + tile.shift + col * p.stride_w;
  float acc[kRows] = {};  // rows past the plane are computed from the patch, not stored
  for (int i = 0; i < p.kernel_h; ++i) {
    const float* line = first + i * p.dilation_h * t.pitch;
    for (int j = 0; j < p.kernel_w; ++j) {
      float weight;
      read_only_load(w_k + i * p.kernel_w + j, weight);
      STITCH_UNROLL
      for (int o = 0; o < kRows; ++o)
        if (o < rows) acc[o] = fmaf(line[o * row_step + j * p.dilation_w], weight, acc[o]);
    }
  }
  const int out_col = tile.out_col + col;
  if (out_col >= p.out_w) return;
  STITCH_UNROLL
  for (int o = 0; o < kRows; ++o) {
    const int out_row = tile.out_row + group * rows + o;
    if (o < rows && out_row < p.out_h) y_plane[out_row * p.out_w + out_col] = acc[o];
  }
}

// Thread tid's outputs of the tile in every output channel of its input channel, from the patch.
template <class Window>
__host__ __device__ inline void depthwise_compute_tile(const DepthwiseParams& p,
                                                       const DepthwiseTile& tile,
                                                       const float* patch, const float* w, float* y,
                                                       int tid) {
  const int channel = tile.in_plane % p.channels;
  for (int m = 0; m < p.multiplier; ++m) {
    const int64_t out_channel = static_cast<int64_t>(channel) * p.multiplier + m;
    const float* w_k = w + out_channel * p.kernel_h * p.kernel_w;
    float* y_plane =
        y + (static_cast<int64_t>(tile.in_plane) * p.multiplier + m) * p.out_h * p.out_w;
    if constexpr (Window::kFixed)
      depthwise_compute_fixed<Window>(p, tile, patch, w_k, y_plane, tid);
    else
      depthwise_compute_any(p, tile, patch, w_k, y_plane, tid);
  }
}

}  // namespace detail
}  // namespace stitch::kernels
