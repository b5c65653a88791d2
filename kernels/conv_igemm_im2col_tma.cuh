// The wgmma convolution's A tile by Hopper's TMA in im2col mode (conv_igemm_tf32x3_wgmma.cuh):
// one cp.async.bulk.tensor.*.im2col per K tile brings the tile's 128 output positions' 32
// channels of one kernel position from a channels-last x into shared memory, already in the
// SWIZZLE_128B layout the consumers read (row r = output position m0 + r, 16-byte chunk c at
// c ^ (r % 8): wgmma_a_offset), the padding as zeros — in place of the producer warpgroup's
// cp.async gather. Here: which shapes it runs (conv_igemm_tma_im2col_problem), the map's fields
// (conv_im2col_map_fields; both pure, tested on the CPU), the load and the map's encoding.
//
// The map (cuTensorMapEncodeIm2col) views x as NWC, NHWC or NDHWC by the shape's spatial dims
// (rank spatial + 2), dimension 0 first: C, W, H, D, N. What the load does (PTX ISA, "Tensors:
// im2col mode"; each load held to its CPU emulation on an H100, 2026-12-06: ConvIm2colTmaProbe
// in tests/kernels/conv_igemm_im2col_tma_test.cu): it walks pixelsPerColumn
// positions in N, D, H, W raster order over a bounding box — per spatial dim from the lower corner
// to extent − 1 + the upper corner — stepping by the traversal stride (elementStrides) and
// wrapping into the next image; the instruction's spatial coordinates are where the walk starts
// (they must lie in the box), its im2col offsets are added to every position, and whatever falls
// outside x — the padding, or images past the batch — reads zero. Here the box's corners are
// −pad_before and pad_after − dilation·(kernel − 1), the traversal stride is the convolution's,
// so the box's strided lattice is exactly the output positions' window origins (out·stride −
// pad); the walk starts at the window origin of the tile's first output position, and a tap's
// offsets are its kernel indices times the dilation. Past M (a last partial tile) the walk runs
// on into images past the batch: zeros, which the epilogue never stores.
//
// K is ordered (kernel position, channel) as for the chunked gather (the weight's split copies
// are the same), and a K tile of 32 columns must be one kernel position's channels: the channels
// a multiple of 32 (channelsPerPixel 32 floats fills the 128-byte swizzle row), so that a tile's
// channels are x's contiguous run at every position.
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

// The im2col map's limits, by rank (index rank − 3: NWC, NHWC, NDHWC). PTX ISA "Tensors: im2col
// mode": the bounding box's corners ([-2^15, 2^15 - 1], [-2^7, 2^7 - 1], [-2^4, 2^4 - 1]) and the
// im2col offsets ([0, 2^16 - 1], [0, 2^8 - 1], [0, 2^5 - 1]). cuTensorMapEncodeIm2col: each
// elementStride 1 to 8, globalDim at most 2^32, globalStrides multiples of 16 below 2^40, the
// address 16-byte aligned, channelsPerPixel's bytes within the 128-byte swizzle span,
// pixelsPerColumn at most 1024.
inline constexpr int kIm2colCornerMin[3] = {-32768, -128, -16};
inline constexpr int kIm2colCornerMax[3] = {32767, 127, 15};
inline constexpr int kIm2colOffsetMax[3] = {65535, 255, 31};
inline constexpr int kIm2colMaxElementStride = 8;
inline constexpr int kIm2colChannels = kGemmBK;  // channelsPerPixel: a K tile, 128 bytes
inline constexpr int kIm2colPixels = kGemmBM;    // pixelsPerColumn: a tile's output positions
static_assert(kIm2colChannels * 4 == 128 && kIm2colPixels <= 1024);

// cuTensorMapEncodeIm2col's arguments for a channels-last x of a shape, every array dimension 0
// (the innermost) first: dims C, W[, H[, D]], N; the spatial arrays W first.
struct ConvIm2colMapFields {
  int rank = 0;                      // spatial + 2
  uint64_t dims[5] = {};             // elements
  uint64_t strides[4] = {};          // bytes, of dims 1 .. rank - 1
  int lower[3] = {}, upper[3] = {};  // the bounding box's corners
  uint32_t element_strides[5] = {};  // the traversal stride: 1 for C and N
  int max_offset[3] = {};            // the largest im2col offset of a tap: dilation·(kernel − 1)
};

// The fields for shape s's x, channels-last with pixel_channels floats per position (every
// group's, padding channels included).
inline ConvIm2colMapFields conv_im2col_map_fields(const ConvIgemmShape& s, int64_t pixel_channels) {
  ConvIm2colMapFields f;
  f.rank = s.spatial + 2;
  f.dims[0] = static_cast<uint64_t>(pixel_channels);
  f.element_strides[0] = 1;
  for (int i = 0; i < s.spatial; ++i) {
    const int j = s.spatial - 1 - i;  // the shape's arrays run outermost first
    f.dims[1 + i] = static_cast<uint64_t>(s.input[j]);
    f.element_strides[1 + i] = static_cast<uint32_t>(s.stride[j]);
    f.max_offset[i] = static_cast<int>(s.dilation[j] * (s.kernel[j] - 1));
    f.lower[i] = static_cast<int>(-s.pad_before[j]);
    f.upper[i] = static_cast<int>(s.pad_after[j]) - f.max_offset[i];
  }
  f.dims[f.rank - 1] = static_cast<uint64_t>(s.batch);
  f.element_strides[f.rank - 1] = 1;
  f.strides[0] = f.dims[0] * sizeof(float);
  for (int d = 1; d < f.rank - 1; ++d)
    f.strides[d] = f.strides[d - 1] * f.dims[d];
  return f;
}

}  // namespace detail

// "" when the wgmma kernel can load A by the im2col TMA for the shape, else why not: the limit of
// the PTX ISA or of cuTensorMapEncodeIm2col it breaks (pure; x's 16-byte alignment is checked as
// the map is encoded).
inline std::string conv_igemm_tma_im2col_problem(const ConvIgemmShape& s) {
  using namespace detail;
  const std::string bad = conv_igemm_shape_problem(s);
  if (!bad.empty()) return bad;
  if (s.groups != 1) return "groups: the map reads one group's channels";
  if (s.in_channels % kIm2colChannels != 0)
    return "input channels not a multiple of 32: a K tile must be one kernel position's 32 "
           "channels (channelsPerPixel 32, one 128-byte row)";
  const ConvIm2colMapFields f = conv_im2col_map_fields(s, s.in_channels);
  const int r = f.rank - 3;
  for (int i = 0; i < s.spatial; ++i) {
    if (f.element_strides[1 + i] > kIm2colMaxElementStride)
      return "a stride above 8 (the map's elementStrides)";
    if (f.lower[i] < kIm2colCornerMin[r] || f.lower[i] > kIm2colCornerMax[r] ||
        f.upper[i] < kIm2colCornerMin[r] || f.upper[i] > kIm2colCornerMax[r])
      return "a bounding-box corner (-pad_before, pad_after - dilation*(kernel-1)) outside [" +
             std::to_string(kIm2colCornerMin[r]) + ", " + std::to_string(kIm2colCornerMax[r]) +
             "] for a rank-" + std::to_string(f.rank) + " map";
    if (f.max_offset[i] > kIm2colOffsetMax[r])
      return "dilation*(kernel-1) past the im2col offsets' [0, " +
             std::to_string(kIm2colOffsetMax[r]) + "] for a rank-" + std::to_string(f.rank) +
             " map";
  }
  return tensor_map_extent_problem(f.rank, f.dims, f.strides);
}

inline bool conv_igemm_tma_im2col_eligible(const ConvIgemmShape& s) {
  return conv_igemm_tma_im2col_problem(s).empty();
}

namespace detail {

// Output position m's image and window origin (out·stride − pad per spatial dim of the 3-d view):
// where the im2col walk of a tile starting at m starts. m < p.m.
struct ConvWindowOrigin {
  int image, d, h, w;
};
__host__ __device__ __forceinline__ ConvWindowOrigin conv_window_origin(const ConvIgemmParams& p,
                                                                        int m) {
  const int image = m / p.out_plane, o = m - image * p.out_plane;
  const int od = o / p.out_hw, ohw = o - od * p.out_hw;
  const int oh = ohw / p.out_w, ow = ohw - oh * p.out_w;
  return {image, od * p.stride[0] - p.pad[0], oh * p.stride[1] - p.pad[1],
          ow * p.stride[2] - p.pad[2]};
}

// One K tile's im2col load: the tensor coordinates (the first of 32 channels, the walk's start,
// the image) and the im2col offsets (the tap's kernel indices times the dilation), per spatial dim
// of the 3-d view; the map's rank counts only the last p.spatial of them.
struct ConvIm2colCoords {
  int channel, d, h, w, image;
  uint16_t off_d, off_h, off_w;
};
// The load of the K tile at `cursor` (start_taps: a K tile is one kernel position's channels
// cursor.channel .. + 31) of the output tile whose first position's window origin is `o`.
__host__ __device__ __forceinline__ ConvIm2colCoords conv_im2col_coords(const ConvIgemmParams& p,
                                                                        const ConvWindowOrigin& o,
                                                                        const ConvKCursor& cursor) {
  return {cursor.channel,
          o.d,
          o.h,
          o.w,
          o.image,
          static_cast<uint16_t>(cursor.kd * p.dilation[0]),
          static_cast<uint16_t>(cursor.kh * p.dilation[1]),
          static_cast<uint16_t>(cursor.kw * p.dilation[2])};
}

#if defined(STITCH_GEMM_WGMMA)
// The load `c` through `map` (rank spatial + 2) of 16 KiB into `dst` (1024-byte aligned),
// completing on `bar`. The instruction takes coordinates and offsets dimension 0 first (C, W, H,
// D, N; W, H, D).
__device__ __forceinline__ void tma_load_conv_im2col(float* dst, const CUtensorMap* map,
                                                     int spatial, const ConvIm2colCoords& c,
                                                     uint64_t* bar) {
  if (spatial == 2) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(smem_address(dst)),
        "l"(map), "r"(c.channel), "r"(c.w), "r"(c.h), "r"(c.image), "r"(smem_address(bar)),
        "h"(c.off_w), "h"(c.off_h)
        : "memory");
  } else if (spatial == 3) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};\n" ::"r"(smem_address(dst)),
        "l"(map), "r"(c.channel), "r"(c.w), "r"(c.h), "r"(c.d), "r"(c.image),
        "r"(smem_address(bar)), "h"(c.off_w), "h"(c.off_h), "h"(c.off_d)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5], {%6};\n" ::"r"(smem_address(dst)),
        "l"(map), "r"(c.channel), "r"(c.w), "r"(c.image), "r"(smem_address(bar)), "h"(c.off_w)
        : "memory");
  }
}
#endif

// Encodes the im2col map of shape s's channels-last x at `x` (pixel_channels floats per position:
// conv_im2col_map_fields) into `map` with `encode` (tensor_map_encoder's
// "cuTensorMapEncodeIm2col"): 32 channels by 128 positions per load, 128-byte swizzle, zeros out
// of bounds. A host call, no device work: the map is a kernel argument, so a captured graph holds
// the one its launch was given. STITCH_OK, else STITCH_ERROR_INVALID_ARGUMENT (x not 16-byte
// aligned) or STITCH_ERROR_CUDA with `error` set.
inline int encode_conv_im2col_map(PFN_cuTensorMapEncodeIm2col_v12000 encode,
                                  const ConvIgemmShape& s, int64_t pixel_channels, const float* x,
                                  CUtensorMap& map, std::string& error) {
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0) {
    error = "ConvIgemm: the im2col TMA needs x 16-byte aligned";
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  const ConvIm2colMapFields f = conv_im2col_map_fields(s, pixel_channels);
  const cuuint64_t dims[5] = {f.dims[0], f.dims[1], f.dims[2], f.dims[3], f.dims[4]};
  const cuuint64_t strides[4] = {f.strides[0], f.strides[1], f.strides[2], f.strides[3]};
  const cuuint32_t element_strides[5] = {f.element_strides[0], f.element_strides[1],
                                         f.element_strides[2], f.element_strides[3],
                                         f.element_strides[4]};
  const CUresult r = encode(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, static_cast<cuuint32_t>(f.rank),
      const_cast<float*>(x), dims, strides, f.lower, f.upper, kIm2colChannels, kIm2colPixels,
      element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    error = "ConvIgemm: cuTensorMapEncodeIm2col failed (" + std::to_string(int{r}) + ")";
    return STITCH_ERROR_CUDA;
  }
  return STITCH_OK;
}

}  // namespace detail

}  // namespace stitch::kernels
