// A direct FP32 convolution for few products per output — few input channels per group times the
// kernel's taps (K = in_channels / groups · prod(kernel) up to kDirectConvMaxK): the level-2 and
// stem convolutions of 3 or 8 input channels, where an implicit GEMM's K tiles stay mostly empty
// and cuDNN's strict FP32 engines run at a fraction of the FP32 peak. FP32 FMAs on the CUDA cores
// (the fp32 track's arithmetic, no tensor cores): each output is fmaf-summed over its K products
// in (input channel, kd, kh, kw) order, padding as zeros — exactly FP32, the same bits every run.
//
// Block: one image, one group, one chunk of output channels (kDirectConvChannelsPerThread per
// thread, `warp_channels` slices), one output depth, `warp_rows` output rows at a time over
// `row_steps` steps, `warp_col_groups` · 32 · cols_per_lane output columns — 8 warps, one per
// (slice, row, column group); a lane's columns are 32 apart, so a warp's loads are consecutive
// shared words and its stores coalesce. Column groups take the warps rows cannot use (fewer
// output rows than warps: a 1-d convolution has one). Shared memory: the chunk's
// weights, [k][chunk channels] (a thread's channels one 32-byte run, read as broadcast float4s),
// loaded once; then per row step the input patch under the step's windows, [channel][kd][row]
// [column], zeros outside x (negative padding crops) — each thread's copies asynchronous
// (cp.async), all in flight before it waits: copied one by one, each a global load's latency
// after the last, they had held the kernel to ~540 GB/s; in two buffers where they fit, the next
// step's patch copied while this one computes (a block otherwise waits on its copies with only
// the SM's other blocks at work: 24% occupancy, 18% of DRAM on level 2's 87_, H100 profile). The
// per-thread work (direct_conv_block, direct_conv_load_weights, direct_conv_load_patch,
// direct_conv_compute) is pure and __host__ __device__: conv_direct_plan_test.cu emulates whole
// launches on the CPU (label unit), in the kernel's order of copies and computes.
//
// ConvDirectTf32 (the tf32 and bf16 tracks) runs the same blocks on the tensor cores: each warp
// takes 16 output channels instead of 8 and its outputs are mma.sync m16n8k8 TF32 products —
// A the channels' weights (fragment order in shared memory, one 16-byte load per K step), B the
// patch under eight outputs' windows (their K offsets from a table built once per block), both
// rounded to TF32 once, in shared memory, as they land; FP32 accumulation; K padded to a multiple
// of 8 with zero weights (and zero patch values: an infinite input must not make 0 · inf). The
// patch rows' pitch is 16 words past a multiple of 32, so the warp's reads of a K step's taps hit
// distinct banks.
//
// Shapes are ConvIgemmShape (conv_igemm_common.cuh), negative padding and an output map
// (ConvIgemmOutputMap: a transposed convolution's phase) included; the fused epilogue is the GEMM
// kernels' (bias, ReLU, GELU), then an output transform where run is given one
// (plane_transform.cuh's signature: the elementwise rest of a convolution's epilogue, applied to
// each result before it is stored). No allocation, no synchronisation: CUDA-graph capturable.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>

#include "channel_reduction.cuh"
#include "conv_igemm_common.cuh"
#include "plane_transform.cuh"
#include "runtime.cuh"
#include "unroll.cuh"

namespace stitch::kernels {
namespace detail {

inline constexpr int kDirectConvThreads = 256;
inline constexpr int kDirectConvWarps = kDirectConvThreads / 32;
inline constexpr int kDirectConvChannelsPerThread = 8;
inline constexpr int64_t kDirectConvMaxK = 1024;
// Shared memory per block at the most (opted into above 48 KiB): two such blocks fit an SM of
// sm_80 and later.
inline constexpr int64_t kDirectConvSharedBytes = 96 * 1024;
inline constexpr int kDirectConvMaxRowSteps = 4;  // row steps a block takes, reusing its weights
// The tensor-core form: output channels per warp (mma's M) and K per mma.
inline constexpr int kDirectConvTf32Channels = 16;
inline constexpr int kDirectConvTf32K = 8;

// The arithmetic: exact FP32 FMAs, or one TF32 product on the tensor cores.
enum class DirectConvMath { fp32, tf32 };

struct DirectConvParams {
  // The 3-d view (index 0 depth, 1 height, 2 width).
  int in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1};
  int pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
  int batch = 1, groups = 1, cin_g = 0, cout_g = 0, k = 0;  // k: cin_g · taps
  int64_t x_image = 0;                                      // floats per image of x
  // Output (image, channel, od, oh, ow) at image·y_image + channel·y_channel + y_origin +
  // od·y_step[0] + oh·y_step[1] + ow·y_step[2].
  int64_t y_image = 0, y_channel = 0, y_origin = 0, y_step[3] = {0, 0, 0};
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  DirectConvMath math = DirectConvMath::fp32;
  // The tiling (plan_direct_conv). slice_channels: a warp's output channels (8 on FP32 FMAs, 16
  // on the tensor cores); k_steps: the tensor cores' K steps (K padded to a multiple of 8).
  int cols_per_lane = 1, warp_rows = 1, warp_col_groups = 1, warp_channels = 1, row_steps = 1;
  int slice_channels = kDirectConvChannelsPerThread, k_steps = 0;
  int patch_rows = 0, patch_cols = 0;  // of one (channel, kd) plane of the patch; cols: its pitch
  int chunks = 1, row_tiles = 1, col_tiles = 1;
  int64_t blocks = 0;
  // A reduction over the output channels (ChannelReduction): one block holds every channel, y
  // one value per output position (y_channel 0).
  bool reduce_channels = false;
  // Shared memory: the weights, the tensor cores' K offset table (k_steps · 8 ints), the patch
  // (patch_floats) in `patch_buffers` buffers — two: row step s + 1's copied while step s
  // computes; with a channel reduction, each warp's per-position partials (warp_channels ·
  // warp_rows · tile_cols).
  int weight_floats = 0, table_floats = 0, patch_floats = 0, patch_buffers = 1, partial_floats = 0;

  __host__ __device__ int chunk_channels() const { return warp_channels * slice_channels; }
  __host__ __device__ int group_cols() const { return 32 * cols_per_lane; }
  __host__ __device__ int tile_cols() const { return warp_col_groups * group_cols(); }
  // Row step `step`'s patch.
  __host__ __device__ int patch_start(int step = 0) const {
    return weight_floats + table_floats + step % patch_buffers * patch_floats;
  }
  __host__ __device__ int partial_start() const {
    return weight_floats + table_floats + patch_buffers * patch_floats;
  }
  __host__ __device__ int64_t shared_bytes() const {
    return 4 * (int64_t{weight_floats} + table_floats + int64_t{patch_buffers} * patch_floats +
                partial_floats);
  }
};

// Where a block works: block index = ((((image · groups + group) · chunks + chunk) · out_d + od)
// · row_tiles + row tile) · col_tiles + col tile.
struct DirectConvBlock {
  int image = 0, group = 0, co0 = 0, od = 0, oh0 = 0, ow0 = 0;
};

__host__ __device__ inline DirectConvBlock direct_conv_block(const DirectConvParams& p,
                                                             int64_t block) {
  DirectConvBlock b;
  const int col_tile = static_cast<int>(block % p.col_tiles);
  block /= p.col_tiles;
  const int row_tile = static_cast<int>(block % p.row_tiles);
  block /= p.row_tiles;
  b.od = static_cast<int>(block % p.out[0]);
  block /= p.out[0];
  b.co0 = static_cast<int>(block % p.chunks) * p.chunk_channels();
  block /= p.chunks;
  b.group = static_cast<int>(block % p.groups);
  b.image = static_cast<int>(block / p.groups);
  b.oh0 = row_tile * p.warp_rows * p.row_steps;
  b.ow0 = col_tile * p.tile_cols();
  return b;
}

// One float from global into shared memory, zero where !valid (src is then not read): on the
// device an asynchronous copy (cp.async: a thread's copies all in flight at once; the kernel
// waits for them before its barrier), on the host a plain one.
__host__ __device__ inline void direct_conv_copy(float* dst, const float* src, bool valid) {
#if defined(__CUDA_ARCH__)
  cp_async_4(dst, src, valid);
#else
  *dst = valid ? *src : 0.0f;
#endif
}

// The chunk's weights into shared memory (thread `tid` of `threads`), zeros for channels past
// the group. w: [out_channels][cin_g][kd][kh][kw], PyTorch's. FP32: [k][chunk channels]. TF32:
// per K step and channel slice, the 32 lanes' mma A fragments (16 channels x 8 k: lane = 4 · row
// + column, floats row / row + 8 by column / column + 4), zeros past K (rounded to TF32 in place
// once landed: direct_conv_round_tf32); then the K offset table: k's (plane, kh, kw) offset into
// the patch, 0 past K. On the device the weights' copies are asynchronous (direct_conv_copy).
__host__ __device__ inline void direct_conv_load_weights(const DirectConvParams& p,
                                                         const DirectConvBlock& b, const float* w,
                                                         float* shared, int tid, int threads) {
  const int cc = p.chunk_channels();
  const float* wg = w + int64_t{b.group} * p.cout_g * p.k;
  if (p.math == DirectConvMath::fp32) {
    for (int i = tid; i < p.weight_floats; i += threads) {
      const int kk = i / cc, c = i - kk * cc, co = b.co0 + c;
      direct_conv_copy(shared + i, wg + int64_t{co} * p.k + kk, co < p.cout_g);
    }
    return;
  }
  for (int i = tid; i < p.weight_floats; i += threads) {
    const int e = i % 4, lane = i / 4 % 32, fragment = i / 128;
    const int slice = fragment % p.warp_channels, step = fragment / p.warp_channels;
    const int co = b.co0 + slice * kDirectConvTf32Channels + lane / 4 + (e & 1) * 8;
    const int kk = step * kDirectConvTf32K + lane % 4 + (e & 2) * 2;
    direct_conv_copy(shared + i, wg + int64_t{co} * p.k + kk, co < p.cout_g && kk < p.k);
  }
  int* table = reinterpret_cast<int*>(shared + p.weight_floats);
  const int taps_per_plane = p.kernel[1] * p.kernel[2];
  for (int kk = tid; kk < p.table_floats; kk += threads) {
    const int plane = kk / taps_per_plane, tap = kk - plane * taps_per_plane;
    const int kh = tap / p.kernel[2], kw = tap - kh * p.kernel[2];
    table[kk] =
        kk < p.k ? (plane * p.patch_rows + kh * p.dilation[1]) * p.patch_cols + kw * p.dilation[2]
                 : 0;
  }
}

// The input patch of row step `step` into its buffer in shared memory (patch_start): for each of
// the group's channels and each kd, the rows and columns every window of the step's outputs reads,
// zeros outside x. A warp per patch row (its coordinates worked out once), lanes along it
// (`threads` a multiple of 32); asynchronous on the device (direct_conv_copy).
__host__ __device__ inline void direct_conv_load_patch(const DirectConvParams& p,
                                                       const DirectConvBlock& b, int step,
                                                       const float* x, float* shared, int tid,
                                                       int threads) {
  float* patch = shared + p.patch_start(step);
  const int id0 = b.od * p.stride[0] - p.pad[0];
  const int ih0 = (b.oh0 + step * p.warp_rows) * p.stride[1] - p.pad[1];
  const int iw0 = b.ow0 * p.stride[2] - p.pad[2];
  const int64_t in_plane = int64_t{p.in[0]} * p.in[1] * p.in[2];
  const float* xg = x + int64_t{b.image} * p.x_image + int64_t{b.group} * p.cin_g * in_plane;
  const int rows = p.patch_floats / p.patch_cols;  // (channel, kd, row) rows
  const int row_step = threads / 32;
  // The row's channel, kd and row within the patch, advanced row_step rows at a time (no
  // divisions past the first row).
  int r = tid / 32, kd = r / p.patch_rows, ci = kd / p.kernel[0];
  r -= kd * p.patch_rows, kd -= ci * p.kernel[0];
  for (int row = tid / 32; row < rows; row += row_step) {
    const int id = id0 + kd * p.dilation[0], ih = ih0 + r;
    const bool row_inside = id >= 0 && id < p.in[0] && ih >= 0 && ih < p.in[1];
    const float* src =
        row_inside ? xg + ci * in_plane + (int64_t{id} * p.in[1] + ih) * p.in[2] : xg;
    float* dst = patch + row * p.patch_cols;
    for (int c = tid % 32; c < p.patch_cols; c += 32) {
      const int iw = iw0 + c;
      direct_conv_copy(dst + c, src + iw, row_inside && iw >= 0 && iw < p.in[2]);
    }
    for (r += row_step; r >= p.patch_rows; r -= p.patch_rows)
      if (++kd == p.kernel[0]) kd = 0, ++ci;
  }
}

// Where thread `tid`'s warp works in row step `step`: its channel slice, row and column group
// (warps fill rows, then column groups, within a slice), its output row; inactive past the
// slices or the output's rows.
struct DirectConvWarp {
  int slice = 0, row = 0, col_group = 0, oh = 0;
  bool active = false;
};

__host__ __device__ inline DirectConvWarp direct_conv_warp(const DirectConvParams& p,
                                                           const DirectConvBlock& b, int step,
                                                           int tid) {
  const int warp = tid / 32, warps_per_slice = p.warp_rows * p.warp_col_groups;
  DirectConvWarp at;
  at.slice = warp / warps_per_slice;
  const int within = warp % warps_per_slice;
  at.row = within % p.warp_rows, at.col_group = within / p.warp_rows;
  at.oh = b.oh0 + step * p.warp_rows + at.row;
  at.active = at.slice < p.warp_channels && at.oh < p.out[1];
  return at;
}

// Thread `tid`'s outputs of row step `step`: cols_per_lane (R) columns 32 apart by
// kDirectConvChannelsPerThread channels, each the fmaf sum of its K products in k order, then the
// epilogue and `transform` (plane: image · out_channels + channel), stored where the output map
// says — or, with a channel reduction, combined over the thread's channels into its warp's
// partials (direct_conv_finish_reduction stores them). Threads past the output or the group store
// nothing.
template <int R, class Transform = PlaneIdentity, class Reduction = NoChannelReduction>
__host__ __device__ inline void direct_conv_compute(const DirectConvParams& p,
                                                    const DirectConvBlock& b, int step,
                                                    float* shared, const float* bias, float* y,
                                                    int tid, const Transform& transform = {}) {
  constexpr int CT = kDirectConvChannelsPerThread;
  const int lane = tid % 32;
  const DirectConvWarp at = direct_conv_warp(p, b, step, tid);
  if (!at.active) return;
  const int wc = at.slice, wr = at.row, wg = at.col_group, oh = at.oh;
  const int cc = p.chunk_channels();
  const float* weights = shared + wc * CT;
  const float* patch = shared + p.patch_start(step);
  float acc[R][CT];
  STITCH_UNROLL
  for (int j = 0; j < R; ++j) {
    STITCH_UNROLL
    for (int c = 0; c < CT; ++c)
      acc[j][c] = 0.0f;
  }
  const int first_col = wg * p.group_cols() + lane;  // within the tile
  const int column0 = first_col * p.stride[2];
  const int lane_step = 32 * p.stride[2];
  int kk = 0;
  for (int plane = 0; plane < p.cin_g * p.kernel[0]; ++plane) {
    for (int kh = 0; kh < p.kernel[1]; ++kh) {
      const float* row =
          patch + (plane * p.patch_rows + wr * p.stride[1] + kh * p.dilation[1]) * p.patch_cols +
          column0;
      for (int kw = 0; kw < p.kernel[2]; ++kw, ++kk) {
        float wv[CT];
        const float* wk = weights + kk * cc;
#if defined(__CUDA_ARCH__)
        // 16-byte broadcasts: kk · cc and wc · CT are multiples of 4.
        STITCH_UNROLL
        for (int c = 0; c < CT; c += 4) {
          const float4 v = *reinterpret_cast<const float4*>(wk + c);
          wv[c] = v.x, wv[c + 1] = v.y, wv[c + 2] = v.z, wv[c + 3] = v.w;
        }
#else
        for (int c = 0; c < CT; ++c)
          wv[c] = wk[c];
#endif
        const float* at = row + kw * p.dilation[2];
        STITCH_UNROLL
        for (int j = 0; j < R; ++j) {
          const float xv = at[j * lane_step];
          STITCH_UNROLL
          for (int c = 0; c < CT; ++c)
            acc[j][c] = fmaf(xv, wv[c], acc[j][c]);
        }
      }
    }
  }
  const int64_t base = int64_t{b.image} * p.y_image + p.y_origin + int64_t{b.od} * p.y_step[0] +
                       int64_t{oh} * p.y_step[1];
  float reduced[R];  // with a channel reduction: per column, over the thread's channels
  STITCH_UNROLL
  for (int j = 0; j < R; ++j)
    reduced[j] = Reduction::identity();
  with_gemm_activation(p.epilogue, [&](auto activation) {
    STITCH_UNROLL
    for (int c = 0; c < CT; ++c) {
      const int co = b.co0 + wc * CT + c;
      if (co >= p.cout_g) break;
      const int channel = b.group * p.cout_g + co;
      const int64_t plane = int64_t{b.image} * p.groups * p.cout_g + channel;
      const float add = epilogue_has_bias(p.epilogue) ? bias[channel] : 0.0f;
      STITCH_UNROLL
      for (int j = 0; j < R; ++j) {
        const float v = transform(plane, activation(acc[j][c] + add));
        if constexpr (kReducesChannels<Reduction>) {
          reduced[j] = Reduction::combine(reduced[j], v);
        } else {
          const int ow = b.ow0 + first_col + 32 * j;
          if (ow < p.out[2]) y[base + channel * p.y_channel + int64_t{ow} * p.y_step[2]] = v;
        }
      }
    }
  });
  if constexpr (kReducesChannels<Reduction>) {
    float* partial =
        shared + p.partial_start() + (wc * p.warp_rows + wr) * p.tile_cols() + first_col;
    STITCH_UNROLL
    for (int j = 0; j < R; ++j)
      partial[32 * j] = reduced[j];
  }
}

// Thread `tid`'s share of row step `step`'s channel reduction, once every warp's partials are in
// shared memory: per output position of the step, the channel slices' partials combined in slice
// order, then the reduction's `finish` (plane: the image), stored at y's position.
template <class Reduction>
__host__ __device__ inline void direct_conv_finish_reduction(const DirectConvParams& p,
                                                             const DirectConvBlock& b, int step,
                                                             const float* shared, float* y,
                                                             int tid, int threads,
                                                             const Reduction& reduction) {
  const float* partials = shared + p.partial_start();
  const int positions = p.warp_rows * p.tile_cols();
  for (int i = tid; i < positions; i += threads) {
    const int row = i / p.tile_cols(), col = i - row * p.tile_cols();
    const int oh = b.oh0 + step * p.warp_rows + row, ow = b.ow0 + col;
    if (oh >= p.out[1] || ow >= p.out[2]) continue;
    float r = partials[i];
    for (int slice = 1; slice < p.warp_channels; ++slice)
      r = Reduction::combine(r, partials[slice * positions + i]);
    y[int64_t{b.image} * p.y_image + p.y_origin + int64_t{b.od} * p.y_step[0] +
      int64_t{oh} * p.y_step[1] + int64_t{ow} * p.y_step[2]] = reduction.finish(b.image, r);
  }
}

#if defined(__CUDACC__)
// An int known at compile time (std::integral_constant's conversion is host code only).
template <int N>
struct DirectConvConstant {
  __host__ __device__ constexpr operator int() const { return N; }
};

// The tensor-core form's operands rounded to TF32 once, in shared memory, rather than at each of
// their reads: thread `tid`'s own copies (the weights' with row step 0, then step `step`'s patch
// — the loops of direct_conv_load_weights and direct_conv_load_patch), once they have landed and
// before the barrier that shows them to the other threads.
__device__ inline void direct_conv_round_tf32(const DirectConvParams& p, int step, float* shared,
                                              int tid, int threads) {
  auto round = [](float& v) { v = __uint_as_float(round_tf32(v)); };
  if (step == 0)
    for (int i = tid; i < p.weight_floats; i += threads)
      round(shared[i]);
  float* patch = shared + p.patch_start(step);
  const int rows = p.patch_floats / p.patch_cols;
  for (int row = tid / 32; row < rows; row += threads / 32)
    for (int c = tid % 32; c < p.patch_cols; c += 32)
      round(patch[row * p.patch_cols + c]);
}

// direct_conv_compute on the tensor cores (DirectConvMath::tf32): the warp's 16 channels by its
// 32 · R columns as 4 · R mma tiles of 8 columns, K step by K step; then the epilogue and
// `transform` per output, stored where the output map says (lane: channels g and g + 8, columns
// 2t and 2t + 1 of each tile, g = lane / 4, t = lane % 4) — or, with a channel reduction,
// combined over the warp's 16 channels (its lanes' two, then across g) into its partials. Device
// code only: the mma is the warp's.
template <int R, class Transform, class Reduction>
__device__ inline void direct_conv_compute_tf32(const DirectConvParams& p, const DirectConvBlock& b,
                                                int step, float* shared, const float* bias,
                                                float* y, int tid, const Transform& transform) {
  constexpr int kTiles = 4 * R;
  const int lane = tid % 32, g = lane / 4, t = lane % 4;
  const DirectConvWarp at = direct_conv_warp(p, b, step, tid);
  if (!at.active) return;
  const int wc = at.slice, wr = at.row, wg = at.col_group, oh = at.oh;
  const int* table = reinterpret_cast<const int*>(shared + p.weight_floats);
  const float* fragments = shared + wc * 128 + lane * 4;
  const int first_col = wg * p.group_cols();  // the warp's first column within the tile
  // The patch under column first_col + g of each tile (8 · stride apart), tap (0, 0, 0).
  const float* under = shared + p.patch_start(step) + wr * p.stride[1] * p.patch_cols +
                       (first_col + g) * p.stride[2];
  float acc[kTiles][4];
  STITCH_UNROLL
  for (int j = 0; j < kTiles; ++j)
    acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  // Step s's products; `tail`: the one step past K's last multiple of 8, whose padding reads
  // zeros (its weights are zero too, but an infinite input must not make 0 · inf). Weights and
  // patch hold TF32 values already (direct_conv_round_tf32). `tile_step` a constant where the
  // stride is 1 (the tiles' loads then take immediate offsets).
  auto k_step = [&](int s, bool tail, auto tile_step) {
    const float4 a = *reinterpret_cast<const float4*>(fragments + s * p.warp_channels * 128);
    const uint32_t af[4] = {__float_as_uint(a.x), __float_as_uint(a.y), __float_as_uint(a.z),
                            __float_as_uint(a.w)};
    const int k0 = s * kDirectConvTf32K + t;
    const bool inside0 = !tail || k0 < p.k, inside1 = !tail || k0 + 4 < p.k;
    const float* b0 = under + table[k0];
    const float* b1 = under + table[k0 + 4];
    STITCH_UNROLL
    for (int j = 0; j < kTiles; ++j) {
      const uint32_t bf[2] = {inside0 ? __float_as_uint(b0[j * tile_step]) : 0u,
                              inside1 ? __float_as_uint(b1[j * tile_step]) : 0u};
      mma_tf32(acc[j], af, bf);
    }
  };
  auto k_steps = [&](auto tile_step) {
    const int whole_steps = p.k / kDirectConvTf32K;
    for (int s = 0; s < whole_steps; ++s)
      k_step(s, false, tile_step);
    if (whole_steps < p.k_steps) k_step(whole_steps, true, tile_step);
  };
  if (p.stride[2] == 1)
    k_steps(DirectConvConstant<8>{});
  else
    k_steps(8 * p.stride[2]);
  // The lane's two channels (g, g + 8): each one's bias, once.
  int channel[2];
  float add[2];
  bool inside[2];
  STITCH_UNROLL
  for (int half = 0; half < 2; ++half) {
    const int co = b.co0 + wc * kDirectConvTf32Channels + g + 8 * half;
    inside[half] = co < p.cout_g;
    channel[half] = b.group * p.cout_g + co;
    add[half] = epilogue_has_bias(p.epilogue) && inside[half] ? bias[channel[half]] : 0.0f;
  }
  // Accumulator e of tile j: channel g + 8 · (e / 2), column 2t + e % 2.
  const int64_t image_planes = int64_t{b.image} * p.groups * p.cout_g;
  const int64_t base = int64_t{b.image} * p.y_image + p.y_origin + int64_t{b.od} * p.y_step[0] +
                       int64_t{oh} * p.y_step[1];
  const int ow0 = b.ow0 + first_col + 2 * t;  // the lane's first column (tile j's: + 8 j)
  with_gemm_activation(p.epilogue, [&](auto activation) {
    auto result = [&](int j, int e) {
      return transform(image_planes + channel[e / 2], activation(acc[j][e] + add[e / 2]));
    };
    if constexpr (kReducesChannels<Reduction>) {
      float* partial = shared + p.partial_start() + (wc * p.warp_rows + wr) * p.tile_cols() +
                       first_col + 2 * t;
      STITCH_UNROLL
      for (int j = 0; j < kTiles; ++j) {
        STITCH_UNROLL
        for (int column = 0; column < 2; ++column) {
          float r = Reduction::identity();
          if (inside[0]) r = Reduction::combine(r, result(j, column));
          if (inside[1]) r = Reduction::combine(r, result(j, column + 2));
          STITCH_UNROLL
          for (int mask = 4; mask < 32; mask *= 2)  // the lanes of this column: g = 0 .. 7
            r = Reduction::combine(r, __shfl_xor_sync(0xffffffffu, r, mask));
          if (g == 0) partial[8 * j + column] = r;
        }
      }
    } else {
      STITCH_UNROLL
      for (int half = 0; half < 2; ++half) {
        if (!inside[half]) break;
        float* row = y + base + channel[half] * p.y_channel + int64_t{ow0} * p.y_step[2];
        // The lane's two columns side by side in y: one 8-byte store (tile j's 32 bytes on).
        const bool pairs = p.y_step[2] == 1 && (reinterpret_cast<uintptr_t>(row) & 7) == 0;
        STITCH_UNROLL
        for (int j = 0; j < kTiles; ++j) {
          const int ow = ow0 + 8 * j;
          const float v0 = result(j, 2 * half), v1 = result(j, 2 * half + 1);
          if (pairs && ow + 1 < p.out[2]) {
            *reinterpret_cast<float2*>(row + 8 * j) = make_float2(v0, v1);
          } else {
            float* at = row + int64_t{8 * j} * p.y_step[2];
            if (ow < p.out[2]) at[0] = v0;
            if (ow + 1 < p.out[2]) at[p.y_step[2]] = v1;
          }
        }
      }
    }
  });
}
#endif

// Three blocks per SM: at most 80 registers, which the 4 x 8 accumulators fit without spilling
// (ptxas, sm_90; left to itself it took 64 and spilled). The tensor-core form's 16 x 4 at R = 4
// take two blocks per SM (128 registers), its 8 x 4 at R = 2 three.
__host__ __device__ constexpr int direct_conv_blocks_per_sm(DirectConvMath math,
                                                            int cols_per_lane) {
  return math == DirectConvMath::tf32 && cols_per_lane == 4 ? 2 : 3;
}

template <int R, class Transform, DirectConvMath kMath = DirectConvMath::fp32,
          class Reduction = NoChannelReduction>
__global__ void __launch_bounds__(kDirectConvThreads, direct_conv_blocks_per_sm(kMath, R))
    direct_conv_kernel(DirectConvParams p, const float* __restrict__ x, const float* __restrict__ w,
                       const float* __restrict__ bias, float* __restrict__ y,
                       const Transform transform, const Reduction reduction) {
  extern __shared__ float4 direct_conv_smem[];
  float* shared = reinterpret_cast<float*>(direct_conv_smem);
  const DirectConvBlock b = direct_conv_block(p, blockIdx.x);
  // Row step 0's patch with the weights; each later one's while the step before it computes (two
  // patch buffers), else after it. Uniform across the block.
  const bool ahead = p.patch_buffers > 1;
  auto has_step = [&](int step) {
    return step < p.row_steps && b.oh0 + step * p.warp_rows < p.out[1];
  };
  direct_conv_load_weights(p, b, w, shared, threadIdx.x, blockDim.x);
  direct_conv_load_patch(p, b, 0, x, shared, threadIdx.x, blockDim.x);
  cp_async_commit();
  for (int step = 0; has_step(step); ++step) {
    if (step > 0) __syncthreads();  // step - 1's reads of its patch buffer and partials are done
    const int copied = ahead ? step + 1 : step;
    if (copied > 0 && has_step(copied))
      direct_conv_load_patch(p, b, copied, x, shared, threadIdx.x, blockDim.x);
    cp_async_commit();  // (empty where nothing was copied)
    // This thread's copies of this step's patch have landed (ahead: all but the latest group).
    if (ahead)
      cp_async_wait<1>();
    else
      cp_async_wait<0>();
    if constexpr (kMath == DirectConvMath::tf32)
      direct_conv_round_tf32(p, step, shared, threadIdx.x, blockDim.x);
    __syncthreads();
    if constexpr (kMath == DirectConvMath::fp32)
      direct_conv_compute<R, Transform, Reduction>(p, b, step, shared, bias, y, threadIdx.x,
                                                   transform);
    else
      direct_conv_compute_tf32<R, Transform, Reduction>(p, b, step, shared, bias, y, threadIdx.x,
                                                        transform);
    if constexpr (kReducesChannels<Reduction>) {
      __syncthreads();  // every warp's partials are in
      direct_conv_finish_reduction(p, b, step, shared, y, threadIdx.x, blockDim.x, reduction);
    }
  }
}

// The tiling for `s` into `p` (whose shape fields it fills) in `math`; "" when the kernel runs
// it, else why not. Channels per block: the group's output channels in slices of 8 (16 on the
// tensor cores; a power-of-two count of slices, at most a warp each), the remaining warps on
// consecutive rows, or, past the output's rows, on further column groups while the width needs
// them; a lane's columns cover the output width with as few as possible (1, 2 or 4, at most
// `max_cols_per_lane`); where the weights and the patch exceed kDirectConvSharedBytes, fewer
// columns, then fewer channel slices.
// Row steps (the weights loaded once for more rows): up to kDirectConvMaxRowSteps while at least
// four blocks per SM remain (`sms`), the patch then double-buffered where that fits. With
// `reduce_channels` (ChannelReduction) every output channel in one block — one group, at most 8
// slices, never fewer — and room for the partials; y then holds one value per output position.
inline std::string plan_direct_conv(const ConvIgemmShape& s, int sms, DirectConvParams& p,
                                    DirectConvMath math = DirectConvMath::fp32,
                                    bool reduce_channels = false, int max_cols_per_lane = 4) {
  if (std::string bad = conv_igemm_shape_problem(s); !bad.empty()) return bad;
  if (reduce_channels && s.groups != 1) return "a channel reduction takes one group";
  const ConvIgemmDims d = conv_igemm_dims(s);
  p = DirectConvParams{};
  int64_t taps = 1;
  for (int i = 0; i < 3; ++i) {
    p.in[i] = static_cast<int>(d.input[i]), p.out[i] = static_cast<int>(d.output[i]);
    p.kernel[i] = static_cast<int>(d.kernel[i]), p.stride[i] = static_cast<int>(d.stride[i]);
    p.pad[i] = static_cast<int>(d.pad[i]), p.dilation[i] = static_cast<int>(d.dilation[i]);
    taps *= d.kernel[i];
  }
  const int64_t cin_g = s.in_channels / s.groups, cout_g = s.out_channels / s.groups;
  if (cin_g * taps > kDirectConvMaxK)
    return "more products per output than the direct kernel takes";
  p.batch = static_cast<int>(s.batch), p.groups = static_cast<int>(s.groups);
  p.cin_g = static_cast<int>(cin_g), p.cout_g = static_cast<int>(cout_g);
  p.k = static_cast<int>(cin_g * taps);
  p.math = math;
  const bool tf32 = math == DirectConvMath::tf32;
  p.slice_channels = tf32 ? kDirectConvTf32Channels : kDirectConvChannelsPerThread;
  p.k_steps = tf32 ? (p.k + kDirectConvTf32K - 1) / kDirectConvTf32K : 0;
  p.table_floats = p.k_steps * kDirectConvTf32K;
  const int64_t in_plane = d.input[0] * d.input[1] * d.input[2];
  const int64_t out_plane = d.output[0] * d.output[1] * d.output[2];
  p.x_image = s.in_channels * in_plane;
  p.reduce_channels = reduce_channels;
  p.y_image = (reduce_channels ? 1 : s.out_channels) * out_plane;
  p.y_channel = reduce_channels ? 0 : out_plane;
  p.y_step[0] = d.output[1] * d.output[2], p.y_step[1] = d.output[2], p.y_step[2] = 1;
  int slices = 1;
  while (slices < kDirectConvWarps && slices * p.slice_channels < cout_g)
    slices *= 2;
  if (reduce_channels && slices * p.slice_channels < cout_g)
    return "a channel reduction takes at most " +
           std::to_string(kDirectConvWarps * p.slice_channels) + " output channels";
  int cols = std::min(p.out[2] <= 32 ? 1 : p.out[2] <= 64 ? 2 : 4, max_cols_per_lane);
  auto shape_tiles = [&](int lane_cols, int channel_slices) {
    p.cols_per_lane = lane_cols, p.warp_channels = channel_slices;
    p.warp_rows = kDirectConvWarps / channel_slices;
    p.warp_col_groups = 1;
    while (p.warp_rows > 1 && p.warp_rows / 2 >= p.out[1] &&
           p.warp_col_groups * p.group_cols() < p.out[2]) {
      p.warp_rows /= 2;
      p.warp_col_groups *= 2;
    }
    p.patch_rows = (p.warp_rows - 1) * p.stride[1] + (p.kernel[1] - 1) * p.dilation[1] + 1;
    p.patch_cols = (p.tile_cols() - 1) * p.stride[2] + (p.kernel[2] - 1) * p.dilation[2] + 1;
    if (tf32)
      p.patch_cols += (16 - p.patch_cols % 32 + 32) % 32;  // pitch 16 past 32s: no conflicts
    p.weight_floats = (tf32 ? p.k_steps * kDirectConvTf32K : p.k) * p.chunk_channels();
    p.patch_floats = p.cin_g * p.kernel[0] * p.patch_rows * p.patch_cols;
    p.partial_floats = reduce_channels ? channel_slices * p.warp_rows * p.tile_cols() : 0;
    return p.shared_bytes() <= kDirectConvSharedBytes;
  };
  bool fits = false;
  const int fewest_slices = reduce_channels ? slices : 1;
  for (int c = cols; c >= 1 && !fits; c /= 2)
    for (int slices_now = slices; slices_now >= fewest_slices && !fits; slices_now /= 2)
      fits = shape_tiles(c, slices_now);
  if (!fits) return "the weights and input patch exceed the direct kernel's shared memory";
  p.chunks = static_cast<int>((cout_g + p.chunk_channels() - 1) / p.chunk_channels());
  p.col_tiles = (p.out[2] + p.tile_cols() - 1) / p.tile_cols();
  auto count_blocks = [&](int steps) {
    p.row_steps = steps;
    const int rows = p.warp_rows * steps;
    p.row_tiles = (p.out[1] + rows - 1) / rows;
    p.blocks = int64_t{p.batch} * p.groups * p.chunks * p.out[0] * p.row_tiles * p.col_tiles;
  };
  int steps = 1;
  count_blocks(steps);
  while (steps < kDirectConvMaxRowSteps) {
    count_blocks(steps * 2);
    if (p.blocks < 4 * int64_t{std::max(sms, 1)}) {
      count_blocks(steps);
      break;
    }
    steps *= 2;
  }
  // Two patch buffers (the next row step's copied during this one's compute) where the block
  // takes more than one row step and they cost no block per SM: the blocks its registers allow
  // (direct_conv_blocks_per_sm) at 96 KiB / 64 KiB fit an H100's 228 KiB.
  if (p.row_steps > 1) {
    p.patch_buffers = 2;
    if (p.shared_bytes() >
        kDirectConvSharedBytes * 2 / direct_conv_blocks_per_sm(math, p.cols_per_lane))
      p.patch_buffers = 1;
  }
  if (p.blocks > INT32_MAX) return "more blocks than one launch holds";
  return "";
}

}  // namespace detail

// A forward convolution on the direct kernel in kMath (ConvDirect: FP32 FMAs; ConvDirectTf32:
// one TF32 product on the tensor cores, sm_80 and later, or FP32 FMAs where the tensor cores'
// tiling exceeds the shared memory — its 16-channel slices take taller patches: many input
// channels of a pointwise convolution): init plans it (no allocation), run launches one kernel.
// An output map (set_output_map, before init) places the outputs in a larger y; a channel
// reduction (set_channel_reduction, before init) stores one value per output position instead.
template <detail::DirectConvMath kMath>
class ConvDirectOf {
 public:
  // "" when the direct kernel runs `shape`, else why not (no device needed: 132 SMs assumed).
  static std::string shape_problem(const ConvIgemmShape& shape) {
    detail::DirectConvParams p;
    return plan(shape, 132, p);
  }

  // "" when the direct kernel runs `shape` with a channel reduction, else why not.
  static std::string channel_reduction_problem(const ConvIgemmShape& shape) {
    detail::DirectConvParams p;
    return plan(shape, 132, p, true);
  }

  // OutputTransform, Reduction: the types of the output transform and channel reduction run will
  // be given (the shared-memory opt-in is per kernel instantiation; the identity's too, as
  // init-time timing runs it).
  template <class OutputTransform = detail::PlaneIdentity,
            class Reduction = detail::NoChannelReduction>
  int init(const ConvIgemmShape& shape, MatmulEpilogue epilogue, std::string& error) {
    ready_ = false;
    if (max_cols_per_lane_ != 1 && max_cols_per_lane_ != 2 && max_cols_per_lane_ != 4) {
      error = "ConvDirect::init: columns per lane are 1, 2 or 4, not " +
              std::to_string(max_cols_per_lane_);
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (const char* bad = detail::channel_reduction_setup_problem<Reduction>(reduce_, has_map_);
        *bad != '\0') {
      error = std::string("ConvDirect::init: ") + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    DeviceProperties props;
    STITCH_CHECK_CUDA(current_device_properties(props));
    if (std::string bad = plan(shape, props.sm_count, p_, reduce_, max_cols_per_lane_);
        !bad.empty()) {
      error = "ConvDirect::init: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    p_.epilogue = epilogue;
    if (has_map_) {
      p_.y_image = map_.image_floats, p_.y_channel = map_.channel_floats, p_.y_origin = map_.origin;
      for (int i = 0; i < 3; ++i)
        p_.y_step[i] = map_.step[i];
    }
    // The kernels' limit, not this shape's: the attribute is per kernel and process-wide, and
    // another ConvDirect may need more.
    STITCH_CHECK_CUDA(allow_shared_memory<detail::PlaneIdentity>());  // as timed at init
    STITCH_CHECK_CUDA((allow_shared_memory<OutputTransform, Reduction>()));
    ready_ = true;
    return STITCH_OK;
  }

  // Outputs through `map` instead of a dense y (call before init).
  void set_output_map(const ConvIgemmOutputMap& map) {
    map_ = map;
    has_map_ = true;
  }

  // A lane's columns at the most (1, 2 or 4; the default 4 lets the plan take what the width
  // needs): the bench forces fewer, for more blocks per SM on the tensor cores. Before init.
  void set_max_cols_per_lane(int cols) { max_cols_per_lane_ = cols; }

  // One value per output position, its channels reduced (detail::ChannelReduction, whose type
  // init and whose value run are given): y is [batch, 1, output...] (call before init).
  void set_channel_reduction() { reduce_ = true; }

  // x and w as PyTorch holds them (contiguous), bias [out_channels] when the epilogue has one;
  // `output_transform` applied to each result after the epilogue, then `reduction` where set
  // (init given their types). The signature is ConvIgemmTf32x3's, whose input transform this
  // kernel does not take, and a reduction.
  template <class InputTransform = detail::PlaneIdentity,
            class OutputTransform = detail::PlaneIdentity,
            class Reduction = detail::NoChannelReduction>
  int run(const float* x, const float* w, const float* bias, float* y, cudaStream_t stream,
          std::string& error, const InputTransform& = {},
          const OutputTransform& output_transform = {}, const Reduction& reduction = {}) const {
    static_assert(std::is_same_v<InputTransform, detail::PlaneIdentity>,
                  "the direct kernel takes no input transform");
    if (!ready_ || reduce_ != detail::kReducesChannels<Reduction>) {
      error = ready_ ? "ConvDirect::run: the channel reduction is not the one init planned"
                     : "ConvDirect::run before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (x == nullptr || w == nullptr || y == nullptr ||
        (epilogue_has_bias(p_.epilogue) && bias == nullptr)) {
      error = "ConvDirect::run: a null pointer";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (kMath == detail::DirectConvMath::fp32 || p_.math == detail::DirectConvMath::fp32)
      launch<detail::DirectConvMath::fp32>(x, w, bias, y, stream, output_transform, reduction);
    else if constexpr (kMath != detail::DirectConvMath::fp32)
      launch<kMath>(x, w, bias, y, stream, output_transform, reduction);
    STITCH_CHECK_CUDA(cudaGetLastError());
    return STITCH_OK;
  }

  const detail::DirectConvParams& params() const { return p_; }

  // "direct fp32, 8 ch x 2 slices, 4 rows x 128 cols, 2 row steps, 40.5 KiB" ("direct tf32, 16
  // ch x ..." on the tensor cores; ", channels reduced" with a channel reduction)
  std::string describe() const {
    char text[160];
    std::snprintf(text, sizeof text,
                  "direct %s, %d ch x %d slices, %d rows x %d cols, %d row "
                  "steps, %.1f KiB%s",
                  p_.math == detail::DirectConvMath::fp32 ? "fp32" : "tf32", p_.slice_channels,
                  p_.warp_channels, p_.warp_rows, p_.tile_cols(), p_.row_steps,
                  p_.shared_bytes() / 1024.0, p_.reduce_channels ? ", channels reduced" : "");
    return text;
  }

 private:
  // The tiling in kMath, else (ConvDirectTf32) in FP32 FMAs.
  static std::string plan(const ConvIgemmShape& shape, int sms, detail::DirectConvParams& p,
                          bool reduce_channels = false, int max_cols_per_lane = 4) {
    std::string bad =
        detail::plan_direct_conv(shape, sms, p, kMath, reduce_channels, max_cols_per_lane);
    if (!bad.empty() && kMath != detail::DirectConvMath::fp32)
      bad = detail::plan_direct_conv(shape, sms, p, detail::DirectConvMath::fp32, reduce_channels,
                                     max_cols_per_lane);
    return bad;
  }

  template <detail::DirectConvMath kPlanned, class OutputTransform, class Reduction>
  void launch(const float* x, const float* w, const float* bias, float* y, cudaStream_t stream,
              const OutputTransform& output_transform, const Reduction& reduction) const {
    const auto blocks = static_cast<unsigned>(p_.blocks);
    const size_t smem = static_cast<size_t>(p_.shared_bytes());
    constexpr int kThreads = detail::kDirectConvThreads;
    if (p_.cols_per_lane == 1)
      detail::direct_conv_kernel<1, OutputTransform, kPlanned, Reduction>
          <<<blocks, kThreads, smem, stream>>>(p_, x, w, bias, y, output_transform, reduction);
    else if (p_.cols_per_lane == 2)
      detail::direct_conv_kernel<2, OutputTransform, kPlanned, Reduction>
          <<<blocks, kThreads, smem, stream>>>(p_, x, w, bias, y, output_transform, reduction);
    else
      detail::direct_conv_kernel<4, OutputTransform, kPlanned, Reduction>
          <<<blocks, kThreads, smem, stream>>>(p_, x, w, bias, y, output_transform, reduction);
  }

  // Every kernel run may launch (either arithmetic for ConvDirectTf32).
  template <class OutputTransform, class Reduction = detail::NoChannelReduction>
  static cudaError_t allow_shared_memory() {
    const int bytes = static_cast<int>(detail::kDirectConvSharedBytes);
    cudaError_t status = cudaSuccess;
    for (const void* kernel : kernels<OutputTransform, detail::DirectConvMath::fp32, Reduction>())
      if (status == cudaSuccess)
        status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    if constexpr (kMath != detail::DirectConvMath::fp32)
      for (const void* kernel : kernels<OutputTransform, kMath, Reduction>())
        if (status == cudaSuccess)
          status = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
    return status;
  }
  template <class OutputTransform, detail::DirectConvMath kPlanned, class Reduction>
  static std::array<const void*, 3> kernels() {
    return {reinterpret_cast<const void*>(
                detail::direct_conv_kernel<1, OutputTransform, kPlanned, Reduction>),
            reinterpret_cast<const void*>(
                detail::direct_conv_kernel<2, OutputTransform, kPlanned, Reduction>),
            reinterpret_cast<const void*>(
                detail::direct_conv_kernel<4, OutputTransform, kPlanned, Reduction>)};
  }

  detail::DirectConvParams p_;
  ConvIgemmOutputMap map_;
  bool has_map_ = false;
  bool reduce_ = false;
  int max_cols_per_lane_ = 4;
  bool ready_ = false;
};

using ConvDirect = ConvDirectOf<detail::DirectConvMath::fp32>;
using ConvDirectTf32 = ConvDirectOf<detail::DirectConvMath::tf32>;

}  // namespace stitch::kernels
