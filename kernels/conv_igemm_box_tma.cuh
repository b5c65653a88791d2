// The wgmma convolution's A tile from an NCDHW x as it is, by Hopper's TMA in tiled mode
// (conv_igemm_tf32x3_wgmma.cuh): no channels-last copy of x per run (that copy moved x through
// DRAM twice more: 0.37 of the one-product kernel's 1.79 ms on level 2's 64 -> 128 channels at
// 128², H100). Here: which shapes it runs (conv_igemm_box_tma_problem), the output tiling, the
// map's fields and the K tile's coordinates (pure, tested on the CPU), the load, the producers'
// transpose and the map's encoding.
//
// Output tiling. A block's 128 output positions are a box of one image's output, box_h rows of
// box_w (ConvBoxTile: 128 x 1, 64 x 2, 32 x 4, 16 x 8 or 8 x 16, the fewest positions past the
// output), row r of the tile being position (r / box_w, r % box_w) of the box; positions past the
// output are computed and never stored (conv_tile_position, conv_igemm_common.cuh). A K tile is
// one kernel position's 32 input channels (K ordered (tap, channel), the channels padded to a
// multiple of 32 with zero weights, as the im2col TMA's).
//
// The load. At stride 1 the K tile's inputs are a box of x: the tile's box shifted by the kernel
// position times the dilation, less the padding, 32 channels deep — one cp.async.bulk.tensor per
// K tile (the map views x as W, H[, D], C, N, dimension 0 first), the padding and channels past
// x as the load's out-of-bounds zeros. It lands [channel][row][column] in a staging slot
// (kConvBoxStagingSlots of them, 16 KiB each, past the ring), which the producer warpgroup's 128
// threads transpose into the K-major swizzled tile the consumers read (each thread one tile row:
// 32 loads a K tile, a warp's 32 consecutive positions of one channel; 8 16-byte stores into its
// row's chunks, a quarter warp's eight rows in eight different bank groups). Everything after is
// the kernel's as for the other loads, and the results are bit for bit those of the im2col TMA
// on a channels-last copy where the channels are a multiple of 32 (the same K tiles).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "conv_igemm_common.cuh"
#include "gemm_tf32x3_wgmma.cuh"

namespace stitch::kernels {

namespace detail {

inline constexpr int kConvBoxChannels = kGemmBK;  // a K tile: one kernel position's 32 channels
inline constexpr int kConvBoxStagingSlots = 2;
inline constexpr int kConvBoxStagingBytes = kGemmBM * kConvBoxChannels * 4;  // 16 KiB a slot

// A block's output positions: h rows of w (w · h = 128).
struct ConvBoxTile {
  int w = 0, h = 0;
};

// The box for an output of height out_h and width out_w (1-d: out_h 1, which takes 128 x 1): of
// 128 x 1 ... 8 x 16, the one whose tiles hold the fewest positions past the output; the widest of
// equals (longer runs of x per channel).
inline ConvBoxTile conv_box_tile(int64_t out_h, int64_t out_w) {
  ConvBoxTile best{kGemmBM, 1};
  int64_t best_positions = -1;
  for (int w = kGemmBM; w >= 8; w /= 2) {
    const int h = kGemmBM / w;
    if (h > 1 && out_h == 1) break;
    const int64_t positions = (out_w + w - 1) / w * w * ((out_h + h - 1) / h * h);
    if (best_positions < 0 || positions < best_positions) best = {w, h}, best_positions = positions;
  }
  return best;
}

// The output's height and width in the 3-d view (1-d: height 1).
inline void conv_box_output_hw(const ConvIgemmShape& s, int64_t& out_h, int64_t& out_w) {
  out_w = s.output[s.spatial - 1];
  out_h = s.spatial >= 2 ? s.output[s.spatial - 2] : 1;
}

inline ConvBoxTile conv_box_tile(const ConvIgemmShape& s) {
  int64_t out_h = 0, out_w = 0;
  conv_box_output_hw(s, out_h, out_w);
  return conv_box_tile(out_h, out_w);
}

// Input channels padded to whole K tiles of 32.
inline int64_t conv_box_channels(const ConvIgemmShape& s) {
  return (s.in_channels + kConvBoxChannels - 1) / kConvBoxChannels * kConvBoxChannels;
}

// cuTensorMapEncodeTiled's arguments for shape s's NCDHW x, dimension 0 (the innermost) first:
// W[, H[, D]], C, N.
struct ConvBoxMapFields {
  int rank = 0;              // spatial + 2
  uint64_t dims[5] = {};     // elements
  uint64_t strides[4] = {};  // bytes, of dims 1 .. rank - 1
  uint32_t box[5] = {};      // the tile's columns, rows (1 for depth), 32 channels, one image
};

inline ConvBoxMapFields conv_box_map_fields(const ConvIgemmShape& s, const ConvBoxTile& tile) {
  ConvBoxMapFields f;
  f.rank = s.spatial + 2;
  for (int i = 0; i < s.spatial; ++i) {
    // The shape's arrays run outermost first.
    f.dims[i] = static_cast<uint64_t>(s.input[s.spatial - 1 - i]);
    f.box[i] = i == 0 ? static_cast<uint32_t>(tile.w) : i == 1 ? static_cast<uint32_t>(tile.h) : 1;
  }
  f.dims[s.spatial] = static_cast<uint64_t>(s.in_channels);
  f.box[s.spatial] = kConvBoxChannels;
  f.dims[s.spatial + 1] = static_cast<uint64_t>(s.batch);
  f.box[s.spatial + 1] = 1;
  f.strides[0] = f.dims[0] * sizeof(float);
  for (int d = 1; d < f.rank - 1; ++d)
    f.strides[d] = f.strides[d - 1] * f.dims[d];
  return f;
}

}  // namespace detail

// "" when the wgmma kernel can load A by tiled TMA boxes of an NCDHW x for the shape, else why
// not (pure; x's 16-byte alignment is checked as the map is encoded). The planner also leaves it
// to shapes whose channels pad by at most a third (conv_igemm_box_tma_worth).
inline std::string conv_igemm_box_tma_problem(const ConvIgemmShape& s) {
  using namespace detail;
  if (std::string bad = conv_igemm_shape_problem(s); !bad.empty()) return bad;
  if (s.groups != 1) return "groups: a box holds one group's channels";
  for (int i = 0; i < s.spatial; ++i)
    if (s.stride[i] != 1) return "a stride past 1: a K tile's inputs are no box of x";
  int64_t volume = 1;
  for (int i = 0; i < s.spatial; ++i) volume *= s.kernel[i];
  if (conv_box_channels(s) * volume > INT32_MAX)
    return "K with the channels padded to 32 does not fit int32";
  const ConvBoxMapFields f = conv_box_map_fields(s, conv_box_tile(s));
  return tensor_map_extent_problem(f.rank, f.dims, f.strides);
}

// Whether ConvIgemm loads A by boxes where x arrives NCDHW (no input transform): the shape runs
// (conv_igemm_box_tma_problem), padding its channels to 32 adds at most a third to K (3 channels
// would make 32 of them; those take the channels-last copy padded to 4), and the boxes hold at
// most an eighth more positions than the output (a 56 x 56 output in 64 x 2 boxes computes 14%
// more, about what the copy of x costs on VGG's 256-channel layer; 7 x 7 in 8 x 16 boxes 2.6x).
inline bool conv_igemm_box_tma_worth(const ConvIgemmShape& s) {
  if (!conv_igemm_box_tma_problem(s).empty() ||
      3 * detail::conv_box_channels(s) > 4 * s.in_channels)
    return false;
  int64_t out_h = 0, out_w = 0;
  detail::conv_box_output_hw(s, out_h, out_w);
  const detail::ConvBoxTile tile = detail::conv_box_tile(out_h, out_w);
  const int64_t boxed =
      (out_h + tile.h - 1) / tile.h * tile.h * ((out_w + tile.w - 1) / tile.w * tile.w);
  return 8 * boxed <= 9 * out_h * out_w;
}

namespace detail {

// The parameters for A by boxes: the output tiling (p.box_*; p.tiles_m counts boxes), K ordered
// (tap, channel) over the channels padded to 32.
inline void conv_igemm_box_params(ConvIgemmParams& p, const ConvIgemmShape& s) {
  const ConvBoxTile tile = conv_box_tile(s);
  p.box_w = tile.w, p.box_h = tile.h;
  const int out_h = p.out_hw / p.out_w;
  p.box_tiles_w = (p.out_w + tile.w - 1) / tile.w;
  p.box_tiles_h = (out_h + tile.h - 1) / tile.h;
  p.tiles_m = static_cast<int>(s.batch * (p.out_plane / p.out_hw) * p.box_tiles_h * p.box_tiles_w);
  p.channels = static_cast<int>(conv_box_channels(s));
  p.k = p.channels * p.kernel[0] * p.kernel[1] * p.kernel[2];
  p.box_tma = true;
}

// The load of K tile q (K columns 32q ..) of output tile tm: the box's first column, row and
// depth in x (the 3-d view; may lie in the padding, before or past x), its first channel and
// image.
struct ConvBoxCoords {
  int w, h, d, channel, image;
};
__host__ __device__ __forceinline__ ConvBoxCoords conv_box_coords(const ConvIgemmParams& p, int tm,
                                                                  int q) {
  const ConvBoxPlace box = conv_box_place(p, tm);
  const int out_d = p.out_plane / p.out_hw, image = box.plane / out_d;
  const int od = box.plane - image * out_d;
  const int chunks = p.channels / kConvBoxChannels, tap = q / chunks;
  const int kd = tap / (p.kernel[1] * p.kernel[2]), khw = tap - kd * p.kernel[1] * p.kernel[2];
  const int kh = khw / p.kernel[2], kw = khw - kh * p.kernel[2];
  return {box.column + kw * p.dilation[2] - p.pad[2],
          box.row + kh * p.dilation[1] - p.pad[1],
          od + kd * p.dilation[0] - p.pad[0],
          (q - tap * chunks) * kConvBoxChannels,
          image};
}

#if defined(STITCH_GEMM_WGMMA)
// The box `c` through `map` (rank spatial + 2) into `dst` (128-byte aligned), completing on
// `bar`. Coordinates dimension 0 first: W[, H[, D]], C, N.
__device__ __forceinline__ void tma_load_conv_box(float* dst, const CUtensorMap* map, int spatial,
                                                  const ConvBoxCoords& c, uint64_t* bar) {
  if (spatial == 2) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_address(dst)),
        "l"(map), "r"(c.w), "r"(c.h), "r"(c.channel), "r"(c.image), "r"(smem_address(bar))
        : "memory");
  } else if (spatial == 3) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(smem_address(dst)),
        "l"(map), "r"(c.w), "r"(c.h), "r"(c.d), "r"(c.channel), "r"(c.image),
        "r"(smem_address(bar))
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(smem_address(dst)),
        "l"(map), "r"(c.w), "r"(c.channel), "r"(c.image), "r"(smem_address(bar))
        : "memory");
  }
}

// Producer thread ptid's tile row (ptid) from a landed box [32 channels][128 positions] into the
// raw A tile in the consumers' layout (wgmma_a_offset): chunk c of the row holds channels 4c ..
// 4c + 3.
__device__ __forceinline__ void transpose_conv_box_row(const float* box, float* tile, int ptid) {
#pragma unroll
  for (int c = 0; c < kConvBoxChannels / 4; ++c) {
    const float* from = box + 4 * c * kGemmBM + ptid;
    *reinterpret_cast<float4*>(tile + wgmma_a_offset(ptid, 4 * c)) =
        make_float4(from[0], from[kGemmBM], from[2 * kGemmBM], from[3 * kGemmBM]);
  }
}

// The 128 producer threads' barrier (id 2: the consumers' split-K reduction has 1).
__device__ __forceinline__ void conv_box_producers_sync() {
  asm volatile("bar.sync 2, 128;\n" ::: "memory");
}
#endif

// Encodes the box map of shape s's NCDHW x at `x` into `map` with `encode` (tensor_map_encoder's
// "cuTensorMapEncodeTiled"): boxes of conv_box_tile's positions by 32 channels, no swizzle, zeros
// out of bounds. A host call, no device work. STITCH_OK, else STITCH_ERROR_INVALID_ARGUMENT (x not
// 16-byte aligned) or STITCH_ERROR_CUDA with `error` set.
inline int encode_conv_box_map(PFN_cuTensorMapEncodeTiled_v12000 encode, const ConvIgemmShape& s,
                               const float* x, CUtensorMap& map, std::string& error) {
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0) {
    error = "ConvIgemm: the box TMA needs x 16-byte aligned";
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  const ConvBoxMapFields f = conv_box_map_fields(s, conv_box_tile(s));
  const cuuint64_t dims[5] = {f.dims[0], f.dims[1], f.dims[2], f.dims[3], f.dims[4]};
  const cuuint64_t strides[4] = {f.strides[0], f.strides[1], f.strides[2], f.strides[3]};
  const cuuint32_t box[5] = {f.box[0], f.box[1], f.box[2], f.box[3], f.box[4]};
  const cuuint32_t unit[5] = {1, 1, 1, 1, 1};
  const CUresult r = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, static_cast<cuuint32_t>(f.rank),
                            const_cast<float*>(x), dims, strides, box, unit,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    error = "ConvIgemm: cuTensorMapEncodeTiled failed (" + std::to_string(int{r}) + ")";
    return STITCH_ERROR_CUDA;
  }
  return STITCH_OK;
}

}  // namespace detail

}  // namespace stitch::kernels
