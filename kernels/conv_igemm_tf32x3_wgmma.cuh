// The implicit-GEMM 3xTF32 convolution on Hopper's warpgroup tensor cores (sm_90a only): the
// wgmma GEMM kernel's pipeline (gemm_tf32x3_wgmma.cuh: a producer warpgroup filling an mbarrier
// ring, two consumer warpgroups issuing m64n128k8 wgmmas with chunked FP32 sums, the same split-K
// reduction) with A loaded from the input instead of copied from a matrix. Convolutions with at
// most 64 output channels per group take the pipeline's 64-wide tile (m64n64k8, six stages):
// the 128-wide one would do twice their products. On the one-product tracks, those of more than
// 128 (conv_igemm_wgmma_tile_n) take the 256-wide tile (m64n256k8, unsplit: conv_igemm_common.cuh's
// plan_conv_igemm_wgmma), which reads a third less from L2 per product.
//
// B, the weight [out_channels, K] per group, is split once at init into WgmmaSplitB's two TF32
// copies (one batch per group) and loaded by TMA, exactly as the GEMM's transposed B.
// A, the im2col tile [128 output positions][32 K columns], is loaded one of four ways. Two read
// a channels-last x (ConvIgemmTf32x3 transposes an NCDHW input into its own NDHWC copy first,
// where the channels per group are a multiple of 4 or, one group, padded to one with zero
// channels: conv_igemm_gather_channels) with K ordered (kernel position, channel) — the weight's
// split copies reordered to match (zero columns for padding) — and put the same tile in shared
// memory, so their results should agree bit for bit (conv_igemm_im2col_tma_test.cu holds them to
// it):
// - by TMA in im2col mode (conv_igemm_im2col_tma.cuh), where conv_igemm_tma_im2col_problem allows
//   it (one group, channels a multiple of 32 so that a K tile is one kernel position's channels,
//   the map's limits on strides, padding and dilation) and ConvIgemm::allow_tma_im2col leaves it
//   on (the default): per K tile the producer warpgroup's thread 0 alone issues one load of the
//   tile's 128 output positions' 32 channels of one kernel position with B's, on the stage's FULL
//   barrier — one expect_tx of both, FULL's only arrival (wgmma_produce_by_tma) — and the other
//   producer threads exit; padding and rows past M read as the load's out-of-bounds zeros. The
//   map is a __grid_constant__ argument: of the run's copy of x (encoded at init) or of a
//   channels-last x itself (encoded per run on the host). A uniform branch (p.im2col_tma) in the
//   channels-last instantiation, not an instantiation of its own;
// - gathered by the producer warpgroup's 128 threads with zero-filling 16-byte cp.asyncs
//   (conv_igemm_common.cuh), each thread four rows 32 apart, keeping their window origins and one
//   K cursor for its whole K range (a tile's gather costs no division): two chunks per row and
//   tile (gather_conv_chunks, conv_wgmma_chunk_slot), 8 copies per thread and tile as the GEMM's A.
// Two read an NCDHW x as it is. By TMA boxes (conv_igemm_box_tma.cuh), where
// conv_igemm_box_tma_worth allows it (one group, stride 1, channels padding to 32 by at most a
// third) and ConvIgemm::allow_box_tma leaves it on: output tiles are boxes of one image's output,
// and per K tile the producer warpgroup's thread 0 loads the box of x under a kernel position (32
// channels, padding as out-of-bounds zeros) into a staging slot past the ring, which the 128
// threads transpose into the tile (conv_box_produce) — no per-run copy of x. Or, any channel count:
// the same 128 threads with 4-byte cp.asyncs, 32 per thread and tile (gather_conv_columns,
// conv_wgmma_gather_slot). A warp's eight lanes of one column read eight consecutive output
// positions; one pass's 32 writes land in 32 different banks. This is the slow path: on an H200 it
// ran at 4-20% of the TF32 peak (its producers cannot issue the copies fast enough), the chunked
// path at 20-54% (AlexNet conv2 0.54; kernels/README.md).
//
// Everything after the loads is the GEMM kernel's: the consumers read A from the raw tile and
// split it in registers, the error is the GEMM kernel's (FP32 level), and the epilogue
// (store_conv_tile) writes y = act(conv + bias) in NCDHW — or, with a channel reduction
// (reduce_conv_tile), one value per output position.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "channel_reduction.cuh"
#include "conv_igemm_box_tma.cuh"
#include "conv_igemm_common.cuh"
#include "conv_igemm_im2col_tma.cuh"
#include "gemm_tf32x3_wgmma.cuh"
#include "plane_transform.cuh"

namespace stitch::kernels::detail {

inline constexpr int kConvWgmmaGatherRows = 4;  // tile rows per producer thread, 32 apart

// Where producer thread ptid (0-127) gathers: its first tile row and its first K column.
struct ConvWgmmaGatherSlot {
  int row, first_column;
};
// NCDHW x, 4-byte copies: rows 8w + lane % 8 (+ 32i), columns lane / 8 + 4j.
__host__ __device__ inline ConvWgmmaGatherSlot conv_wgmma_gather_slot(int ptid) {
  const int warp = ptid / 32, lane = ptid % 32;
  return {warp * 8 + lane % 8, lane / 8};
}
// Channels-last x, 16-byte chunks: rows 8w + lane / 4 (+ 32i), columns 8 (lane % 4) and + 4. Four
// lanes read 32 contiguous floats of one position; a quarter warp's chunks (two rows, alternate
// chunk columns) land in eight different 16-byte bank groups of the swizzled tile.
__host__ __device__ inline ConvWgmmaGatherSlot conv_wgmma_chunk_slot(int ptid) {
  const int warp = ptid / 32, lane = ptid % 32;
  return {warp * 8 + lane / 4, 8 * (lane % 4)};
}

#if defined(STITCH_GEMM_WGMMA)
// The epilogue on a consumer thread's sums of output tile tm at column n0 of `group` (row: its
// first tile row; conv_tile_position says which output position a tile row is): y = act(sum +
// bias) in NCDHW (through p's output map), one element per store (adjacent columns are output
// channels, a plane apart), or a pair of channels per 8-byte store where the map puts them side
// by side (p.pair_stores: a channels-last y). Straight runs, as
// apply_bias_activation says why; the position's divisions are done once per row. Then
// `transform` (plane_transform.cuh; plane = image · out_channels + channel), skipped entirely
// for the identity.
template <int kAcc, class Transform>
__device__ __forceinline__ void store_conv_tile(const ConvIgemmParams& p, int group, int tm, int n0,
                                                int row, int t, float (&acc)[kAcc],
                                                const Transform& transform) {
  apply_bias_activation(acc, t, p.epilogue, p.bias + int64_t{group} * p.n, n0, p.n);
  int64_t row_at[2];  // where each of the thread's two rows puts channel 0 of the tile
  bool row_inside[2];
  int64_t row_plane[2];  // the plane of each row's channel 0 of the tile
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int position = conv_tile_position(p, tm, row + 8 * half);
    row_inside[half] = position >= 0;
    const int m = max(position, 0);
    row_at[half] = conv_output_offset(p, group, m, n0);
    row_plane[half] = int64_t{m / p.out_plane} * p.out_channels + int64_t{group} * p.n + n0;
  }
  if constexpr (!std::is_same_v<Transform, PlaneIdentity>)
    for_each_accumulator_pair(acc, t, [&](int half, int column, float& sum, float& next) {
      sum = transform(row_plane[half] + column, sum);
      next = transform(row_plane[half] + column + 1, next);
    });
  if (p.pair_stores) {  // p.n even: a pair lies in y or outside it
    for_each_accumulator_pair(acc, t, [&](int half, int column, float& sum, float& next) {
      if (row_inside[half] && n0 + column < p.n)
        *reinterpret_cast<float2*>(p.y + row_at[half] + column) = make_float2(sum, next);
    });
    return;
  }
  for_each_accumulator_pair(acc, t, [&](int half, int column, float& sum, float& next) {
    const int64_t at = row_at[half] + column * p.y_channel;
    if (row_inside[half] && n0 + column < p.n) p.y[at] = sum;
    if (row_inside[half] && n0 + column + 1 < p.n) p.y[at + p.y_channel] = next;
  });
}

// The epilogue with a channel reduction (one group, N <= kBN: the tile at m0 holds its rows'
// every channel, n0 0, no K split; tile tm): a row's kBN sums lie in one quad of one warp
// (for_each_accumulator_pair), so each thread combines its results (conv_result: epilogue,
// bias and transform) of its two rows, the quad combines them and its lane t = 0 stores each
// row's finished value, y one per position (conv_igemm_reduced_output).
template <int kAcc, class Transform, class Reduction>
__device__ __forceinline__ void reduce_conv_tile(const ConvIgemmParams& p, int tm, int row, int t,
                                                 const float (&acc)[kAcc],
                                                 const Transform& transform,
                                                 const Reduction& reduction) {
  int position[2], image[2];  // of each row (a row past the output: image 0, its result unused)
  float reduced[2] = {Reduction::identity(), Reduction::identity()};
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    position[half] = conv_tile_position(p, tm, row + 8 * half);
    image[half] = max(position[half], 0) / p.out_plane;
  }
#pragma unroll
  for (int j = 0; j < kAcc / 4; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {  // acc[4j + e]: row + 8 (e / 2), column 8j + 2t + e % 2
      const int half = e / 2, channel = j * 8 + 2 * t + e % 2;
      if (channel < p.n)
        reduced[half] = Reduction::combine(
            reduced[half], conv_result(p, image[half], channel, acc[4 * j + e], transform));
    }
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const float r = combine_over_quad<Reduction>(reduced[half]);
    if (t == 0 && position[half] >= 0)
      p.y[conv_output_offset(p, 0, position[half], 0)] = reduction.finish(image[half], r);
  }
}

// The block's sequence of K tiles by boxes (conv_igemm_box_tma.cuh): output tile tm's K tile q,
// through the K ranges of the block's units (blockIdx.x, then gridDim.x apart) one after another.
struct ConvBoxFeed {
  int unit, tm, q, q_end;
  __device__ void start(const ConvIgemmParams& p, const GemmTf32x3Args& order, int first_unit) {
    unit = first_unit;
    if (unit >= order.units) return;
    const int tiles = order.tiles_m * order.tiles_n;
    const GemmTileCoord tile = gemm_tile_coord(order, unit % tiles, unit / tiles);
    const int k_begin = tile.split * order.split_k;
    tm = tile.tm;
    q = k_begin / kGemmBK;
    q_end = (min(p.k, k_begin + order.split_k) + kGemmBK - 1) / kGemmBK;
  }
  __device__ bool done(const GemmTf32x3Args& order) const { return unit >= order.units; }
  __device__ void next(const ConvIgemmParams& p, const GemmTf32x3Args& order) {
    if (++q == q_end) start(p, order, unit + static_cast<int>(gridDim.x));
  }
};

// The producer warpgroup where A comes by boxes of an NCDHW x through `box_map`: thread 0 keeps
// the next kConvBoxStagingSlots boxes of the block's sequence in flight into `staging` (each slot
// completing on its `staged` barrier) and, per K tile, loads B by TMA as wgmma_produce does; all
// 128 threads wait for the tile's box, transpose their row of it into the ring's A tile, and once
// every row is read thread 0 refills the slot; then each arrives at FULL
// (kWgmmaFullArrivalsCopying: the 128 and thread 0's expect_tx). next_tile(unit) moves the
// block's K range to a unit's output tile and returns its coordinates.
template <Tf32Products kProducts, int kBN, class NextTile>
__device__ __forceinline__ void conv_box_produce(const ConvIgemmParams& p,
                                                 const GemmTf32x3Args& order,
                                                 const WgmmaMaps& maps, const CUtensorMap* box_map,
                                                 const WgmmaBlock<kBN>& blk, float* staging,
                                                 uint64_t* staged, int ptid, NextTile&& next_tile) {
  constexpr int kStages = WgmmaTile<kBN>::kStages;
  constexpr int kBoxFloats = kConvBoxStagingBytes / 4;
  ConvBoxFeed ahead{};  // thread 0's: the next box to load
  auto load_box = [&](int slot) {
    mbarrier_arrive_expect_tx(&staged[slot], kConvBoxStagingBytes);
    tma_load_conv_box(staging + slot * kBoxFloats, box_map, p.spatial,
                      conv_box_coords(p, ahead.tm, ahead.q), &staged[slot]);
    ahead.next(p, order);
  };
  if (ptid == 0) {
    ahead.start(p, order, blockIdx.x);
    for (int slot = 0; slot < kConvBoxStagingSlots && !ahead.done(order); ++slot) load_box(slot);
  }
  RingPosition<kConvBoxStagingSlots> box;  // the box the next K tile reads
  for (int unit = blockIdx.x; unit < order.units; unit += gridDim.x) {
    const GemmTileCoord tile = next_tile(unit);
    RingPosition<kStages> at = blk.start;
    for (int kt = 0; kt < blk.k_tiles; ++kt, at.next(), box.next()) {
      const int slot = at.slot;
      if (blk.first + kt >= kStages) mbarrier_wait(&blk.empty[slot], at.lap_parity ^ 1);
      if (ptid == 0) {
        mbarrier_arrive_expect_tx(&blk.full[slot], kWgmmaBBytes<kProducts, kBN>);
        wgmma_load_b<kProducts>(maps, blk, slot, blk.k_begin + kt * kGemmBK, tile.tn * kBN,
                                tile.batch);
      }
      mbarrier_wait(&staged[box.slot], box.lap_parity);
      transpose_conv_box_row(staging + box.slot * kBoxFloats, blk.raw_a(slot), ptid);
      conv_box_producers_sync();  // every row of the box read: the slot may be refilled
      if (ptid == 0 && !ahead.done(order)) {
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        load_box(box.slot);
      }
      mbarrier_arrive(&blk.full[slot]);
    }
  }
}
#endif

// Persistent, as the GEMM kernel (gemm_tf32x3_wgmma_kernel): a block per SM works through the
// output tiles (128 positions x kBN channels), groups and K splits, order.units of them, in
// gemm_tile_coord's order (grid.y of the one-tile-per-block launch was group · splits + split),
// one ring across them, so the producers gather the next tile while the consumers store this one.
// order holds the tile counts, the split plan, the partials and the chunk length (its matrix
// fields are unused). kProducts: 3xTF32 (the fp32 track) or one TF32 product (the tf32 track).
// kChannelsLast: x channels-last, K ordered (tap, channel); there p.im2col_tma has A loaded by
// the im2col TMA through `a_map` (conv_igemm_im2col_tma.cuh) instead of gathered; NCDHW x,
// p.box_tma has it loaded by boxes through `a_map` (conv_igemm_box_tma.cuh) — uniform branches
// rather than more instantiations, as a program's sm_90a build compiles every one.
// Reduction: a channel reduction (reduce_conv_tile) or none (store_conv_tile).
template <bool kChannelsLast, int kBN, class Transform, Tf32Products kProducts, class Reduction>
__global__ void __launch_bounds__(kWgmmaThreads, 1)
    conv_igemm_tf32x3_wgmma_kernel(ConvIgemmParams p, GemmTf32x3Args order,
                                   const __grid_constant__ WgmmaMaps maps,
                                   const __grid_constant__ CUtensorMap a_map,
                                   const Transform transform, const Reduction reduction) {
#if defined(STITCH_GEMM_WGMMA)
  extern __shared__ float4 wgmma_smem[];
  const bool by_tma = kChannelsLast && p.im2col_tma, by_box = !kChannelsLast && p.box_tma;
  __shared__ uint64_t staged[kConvBoxStagingSlots];  // the boxes' barriers (wgmma_block fences)
  if (by_box && threadIdx.x == 0)
    for (int s = 0; s < kConvBoxStagingSlots; ++s) mbarrier_init(&staged[s], 1);
  WgmmaBlock<kBN> blk = wgmma_block<kBN>(
      wgmma_smem, 0, 0, by_tma ? kWgmmaFullArrivalsTma : kWgmmaFullArrivalsCopying);
  const int tiles = order.tiles_m * order.tiles_n;
  // The output tile of `unit`, with the block's K range moved on to it.
  auto next_tile = [&](int unit) {
    const GemmTileCoord tile = gemm_tile_coord(order, unit % tiles, unit / tiles);
    const int k_begin = tile.split * order.split_k;
    blk.advance(k_begin, min(p.k, k_begin + order.split_k));
    return tile;
  };
  const int warp = wgmma_warp();
  if (warp >= kWgmmaConsumerThreads / 32) {
    wgmma_become_producer();
    const int ptid = threadIdx.x - kWgmmaConsumerThreads;
    if (by_tma) {  // thread 0 alone: the other producer threads have nothing to copy
      if (ptid != 0) return;
      for (int unit = blockIdx.x; unit < order.units; unit += gridDim.x) {
        const GemmTileCoord tile = next_tile(unit);
        const ConvWindowOrigin origin = conv_window_origin(p, tile.tm * kGemmBM);
        ConvKCursor cursor;  // per K tile (one tap's 32 channels): the tap and the first channel
        cursor.start_taps(p, blk.k_begin);
        auto load_a = [&](float* s, uint64_t* full) {
          tma_load_conv_im2col(s, &a_map, p.spatial, conv_im2col_coords(p, origin, cursor),
                               full);
          cursor.advance_taps(p, kGemmBK);
        };
        wgmma_produce_by_tma<kProducts>(maps, blk, tile.tn * kBN, tile.batch, load_a);
      }
      return;
    }
    if (by_box) {  // the staging slots lie past the ring
      float* staging = reinterpret_cast<float*>(blk.base + WgmmaTile<kBN>::kStages *
                                                               WgmmaTile<kBN>::kStageBytes);
      conv_box_produce<kProducts>(p, order, maps, &a_map, blk, staging, staged, ptid, next_tile);
      return;
    }
    const ConvWgmmaGatherSlot at =
        kChannelsLast ? conv_wgmma_chunk_slot(ptid) : conv_wgmma_gather_slot(ptid);
    // Where the thread's two chunk columns of its first row lie in a tile: a row 32 further is
    // 32 · 32 floats on, the swizzle the same (row % 8 unchanged). Kept, so that a chunk's shared
    // address is one of them plus a constant, not wgmma_a_offset in registers per chunk.
    const int chunk_at[2] = {wgmma_a_offset(at.row, at.first_column),
                             wgmma_a_offset(at.row, at.first_column + 4)};
    for (int unit = blockIdx.x; unit < order.units; unit += gridDim.x) {
      const GemmTileCoord tile = next_tile(unit);
      const int group = tile.batch, m0 = tile.tm * kGemmBM;
      ConvIgemmRow rows[kConvWgmmaGatherRows];
#pragma unroll
      for (int i = 0; i < kConvWgmmaGatherRows; ++i)
        rows[i].start(p, m0 + at.row + 32 * i, group);
      ConvKCursor cursor;
      if constexpr (kChannelsLast)
        cursor.start_taps(p, blk.k_begin + at.first_column);
      else
        cursor.start(p, blk.k_begin + at.first_column);
      wgmma_produce<kProducts>(maps, blk, tile.tn * kBN, group, ptid, [&](float* s, int) {
        if constexpr (kChannelsLast)
          gather_conv_chunks<kConvWgmmaGatherRows, 32>(
              p, rows, at.row, at.first_column, cursor,
              [&, s](int row, int column, const float* src, bool ok) {
                const int chunk = column == at.first_column ? chunk_at[0] : chunk_at[1];
                cp_async_16(s + chunk + (row - at.row) * 32, src, ok);
              });
        else
          gather_conv_columns<kConvWgmmaGatherRows, 32, 1>(
              p, rows, at.row, at.first_column, cursor,
              [s](int row, int column, const float* src, bool ok) {
                cp_async_4(s + wgmma_a_offset(row, column), src, ok);
              });
      });
    }
    cp_async_wait<0>();
    return;
  }
  wgmma_become_consumer();
#pragma unroll 1
  for (int unit = blockIdx.x; unit < order.units; unit += gridDim.x) {
    const GemmTileCoord tile = next_tile(unit);
    const int group = tile.batch, n0 = tile.tn * kBN;
    wgmma_consume_tile<kProducts>(blk, order, tile, warp, [&](auto& acc, int row, int t) {
      if constexpr (kReducesChannels<Reduction>)
        reduce_conv_tile(p, tile.tm, row, t, acc, transform, reduction);
      else
        store_conv_tile(p, group, tile.tm, n0, row, t, acc, transform);
    });
  }
#else
  (void)p, (void)order, (void)maps, (void)a_map, (void)transform, (void)reduction;
#endif
}

// x [batch][channels][positions] (NCDHW; images x_image floats apart, a window of whole channels
// of a larger buffer or dense) into a dense y [batch][positions][padded] (NDHWC, channels
// `channels` .. padded - 1 zero: conv_igemm_gather_channels), through 32 x 32 shared tiles: reads
// and writes both along contiguous memory, each element through `transform` (plane_transform.cuh:
// plane = image * channels + channel). Block (32, 8); grid (positions / 32, padded / 32 capped at
// 65535, batch), rounded up; a block steps over the channel tiles grid.y apart. A batched
// transpose: with channels and positions swapped (padded = channels, the identity) it turns
// NDHWC back into NCDHW.
template <class Transform>
__global__ void __launch_bounds__(256)
    channels_last_kernel(const float* x, int64_t x_image, float* y, int64_t channels,
                         int64_t padded, int64_t positions, const Transform transform) {
  __shared__ float tile[32][33];
  const int64_t image = blockIdx.z, p0 = blockIdx.x * int64_t{32};
  const float* in = x + image * x_image;
  float* out = y + image * padded * positions;
  for (int64_t c0 = blockIdx.y * int64_t{32}; c0 < padded; c0 += gridDim.y * int64_t{32}) {
    for (int i = threadIdx.y; i < 32; i += 8) {
      const int64_t c = c0 + i, p = p0 + threadIdx.x;
      if (c < padded && p < positions)
        tile[i][threadIdx.x] =
            c < channels ? transform(image * channels + c, in[c * positions + p]) : 0.0f;
    }
    __syncthreads();
    for (int i = threadIdx.y; i < 32; i += 8) {
      const int64_t p = p0 + i, c = c0 + threadIdx.x;
      if (c < padded && p < positions) out[p * padded + c] = tile[threadIdx.x][i];
    }
    __syncthreads();  // the tile is rewritten for the next channels
  }
}

// channels_last_kernel for a y of kPadded (4 or 8) channels per position, channels of them x's
// (an image network's first layer: 3 padded to 4), where the 32 x 32 tiles would leave 28 of a
// warp's 32 writing lanes idle (AlexNet's 1024 images: 3.3 ms, against ~0.45 ms of traffic): a
// thread per position reads its channels along contiguous memory (a warp's lanes 32 positions
// side by side) and writes its kPadded floats as float4s. y 16-byte aligned. Grid (positions in
// blocks of 256, capped; images, capped at 65535): both grid-stride.
template <int kPadded, class Transform>
__global__ void __launch_bounds__(256)
    channels_last_few_kernel(const float* x, int64_t x_image, float* y, int64_t channels,
                             int64_t images, int64_t positions, const Transform transform) {
  static_assert(kPadded % 4 == 0, "whole float4s per position");
  for (int64_t image = blockIdx.y; image < images; image += gridDim.y) {
    const float* in = x + image * x_image;
    float4* out = reinterpret_cast<float4*>(y + image * kPadded * positions);
    for (int64_t p = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; p < positions;
         p += int64_t{gridDim.x} * blockDim.x) {
      float v[kPadded];
#pragma unroll
      for (int c = 0; c < kPadded; ++c)
        v[c] = c < channels ? transform(image * channels + c, in[c * positions + p]) : 0.0f;
#pragma unroll
      for (int q = 0; q < kPadded / 4; ++q)
        out[p * (kPadded / 4) + q] =
            make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
    }
  }
}

// x_image 0: dense, channels · positions; padded 0: channels.
template <class Transform = PlaneIdentity>
inline cudaError_t launch_channels_last(const float* x, float* y, int64_t batch, int64_t channels,
                                        int64_t positions, cudaStream_t stream,
                                        const Transform& transform = {}, int64_t x_image = 0,
                                        int64_t padded = 0) {
  constexpr int64_t kMaxGridY = 65535;
  if (padded == 0) padded = channels;
  if (x_image == 0) x_image = channels * positions;
  if ((padded == 4 || padded == 8) && channels <= padded &&
      reinterpret_cast<uintptr_t>(y) % 16 == 0) {
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>((positions + 255) / 256, 1024)),
                    static_cast<unsigned>(std::min(batch, kMaxGridY)));
    if (padded == 4)
      channels_last_few_kernel<4, Transform>
          <<<grid, 256, 0, stream>>>(x, x_image, y, channels, batch, positions, transform);
    else
      channels_last_few_kernel<8, Transform>
          <<<grid, 256, 0, stream>>>(x, x_image, y, channels, batch, positions, transform);
    return cudaGetLastError();
  }
  const dim3 grid(static_cast<unsigned>((positions + 31) / 32),
                  static_cast<unsigned>(std::min((padded + 31) / 32, kMaxGridY)),
                  static_cast<unsigned>(batch));
  channels_last_kernel<Transform>
      <<<grid, dim3(32, 8), 0, stream>>>(x, x_image, y, channels, padded, positions, transform);
  return cudaGetLastError();
}

// A channels-last x [pixels][channels] into y [pixels][padded], channels .. padded - 1 zero (the
// padded gather's copy of an x that arrives channels-last). A thread per element of y. (A
// template: a header's kernel, defined once however many files include it.)
template <int kUnused = 0>
__global__ void __launch_bounds__(256) pad_channels_kernel(const float* x, float* y, int64_t pixels,
                                                           int64_t channels, int64_t padded) {
  const int64_t total = pixels * padded;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t pixel = i / padded, c = i - pixel * padded;
    y[i] = c < channels ? x[pixel * channels + c] : 0.0f;
  }
}

inline cudaError_t launch_pad_channels(const float* x, float* y, int64_t pixels, int64_t channels,
                                       int64_t padded, cudaStream_t stream) {
  const int64_t blocks = std::min<int64_t>((pixels * padded + 255) / 256, 65535);
  pad_channels_kernel<><<<static_cast<unsigned>(std::max<int64_t>(blocks, 1)), 256, 0, stream>>>(
      x, y, pixels, channels, padded);
  return cudaGetLastError();
}

}  // namespace stitch::kernels::detail
