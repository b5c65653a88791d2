// What the two implicit-GEMM 3xTF32 convolution kernels share (conv_igemm_tf32x3.cuh: mma.sync,
// sm_80 and later; conv_igemm_tf32x3_wgmma.cuh: wgmma, sm_90a): the shape, the GEMM view of a
// convolution, the gather of an A tile from the input, and the output's addressing.
//
// GEMM view, per group g: D[m, co] = sum_k A[m, k] · B[co, k], with
//   m  = (image, output position)              M = batch · prod(output)
//   co = output channel within the group       N = out_channels / groups
//   k  = (input channel within the group, kernel position)  K = in_channels / groups · prod(kernel)
// B is the weight as PyTorch holds it, [out_channels, in_channels / groups, kernel...] contiguous:
// row co of group g is K contiguous floats (a GEMM's transposed-B operand). A is never
// materialised: each A tile is gathered from the NCDHW input while it is loaded (im2col in the
// load), with zeros for padding and for positions past K, any stride and dilation; no workspace.
// 1-d and 2-d convolutions run as 3-d ones with unit leading dims.
//
// The gather (gather_conv_columns): a thread owns some tile rows (output positions, with their
// image base pointer and window origin precomputed in ConvIgemmRow) and every fourth K column of
// the tile; it walks the K columns with an incremental (channel, kd, kh, kw) cursor (no division
// per element). Eight lanes take eight consecutive rows of one column (output positions: a
// 32-byte run of the input at stride 1), so a warp's 4-byte cp.asyncs touch 4 sectors.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gemm_tf32x3_common.cuh"
#include "matmul.cuh"
#include "unroll.cuh"  // in the functions the CPU tests also run

namespace stitch::kernels {

// A forward convolution, NCDHW / NCHW / NCL contiguous FP32, PyTorch's sizes: the first
// `spatial` entries of each array count. out_channels and in_channels include every group.
struct ConvIgemmShape {
  int spatial = 2;  // 1, 2 or 3
  int64_t batch = 1, in_channels = 0, out_channels = 0, groups = 1;
  int64_t input[3] = {1, 1, 1}, output[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad_before[3] = {0, 0, 0}, pad_after[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
};

// Where a convolution's outputs go in y when y is not its own dense tensor: a transposed
// convolution's phase (conv_transpose_phases.cuh) writes every stride-th element of a larger y.
// Output (image, channel, od, oh, ow) lands on image·image_floats + channel·channel_floats + origin
// + od·step[0] + oh·step[1] + ow·step[2] (3-d view).
struct ConvIgemmOutputMap {
  int64_t image_floats = 0, channel_floats = 0, origin = 0, step[3] = {0, 0, 0};
};

namespace detail {

inline constexpr int kConvIgemmMaxGroups = 65535;  // grid.y

// The 3-d view: index 0 depth, 1 height, 2 width; unit sizes in front of a 1-d or 2-d shape.
struct ConvIgemmDims {
  int64_t input[3], output[3], kernel[3], stride[3], pad[3], dilation[3];
};
// The first `spatial` values of `v` in the 3-d view, `unit` in front.
inline void conv_3d(const int64_t (&v)[3], int spatial, int64_t unit, int64_t (&out)[3]) {
  for (int i = 0; i < 3; ++i) out[i] = i < 3 - spatial ? unit : v[i - (3 - spatial)];
}
inline ConvIgemmDims conv_igemm_dims(const ConvIgemmShape& s) {
  ConvIgemmDims d;
  conv_3d(s.input, s.spatial, 1, d.input);
  conv_3d(s.output, s.spatial, 1, d.output);
  conv_3d(s.kernel, s.spatial, 1, d.kernel);
  conv_3d(s.stride, s.spatial, 1, d.stride);
  conv_3d(s.pad_before, s.spatial, 0, d.pad);
  conv_3d(s.dilation, s.spatial, 1, d.dilation);
  return d;
}

// What the kernel reads; int where every index fits 31 bits (conv_igemm_shape_problem checks).
struct ConvIgemmParams {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
  int m = 0, n = 0, k = 0;  // the per-group GEMM
  int out_channels = 0;     // every group's: an output transform's planes are image · these + c
  int channels = 0;         // input channels per group
  int in[3] = {}, out_hw = 0, out_w = 0, kernel[3] = {}, stride[3] = {}, pad[3] = {},
      dilation[3] = {};
  int in_plane = 0, out_plane = 0;   // positions per channel
  int64_t x_image = 0, y_image = 0;  // floats per image
  // Where output position (od, oh, ow) of channel c lies in an image of y: c·y_channel + y_origin
  // + od·y_step[0] + oh·y_step[1] + ow·y_step[2] (ConvIgemmOutputMap; dense by default).
  int64_t y_channel = 0, y_origin = 0, y_step[3] = {};
  // The wgmma epilogue may store two channels at once: y_channel 1, N even and every offset even
  // (conv_igemm_pair_stores), y 8-byte aligned.
  bool pair_stores = false;
  int tiles_m = 0, tiles_n = 0;
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  // x channels-last (NDHWC: conv_igemm_channels_last sets it), with K ordered (tap, channel):
  // A[m, tap·channels + c] — every kernel position's channel run contiguous in x.
  bool channels_last = false;
  int pixel_stride = 0;  // channels-last: floats per input position (every group's channels)
  // Channels-last x loaded by one im2col TMA per K tile instead of the chunked gather (where
  // conv_igemm_tma_im2col_problem allows it), through a map of spatial + 2 dimensions.
  bool im2col_tma = false;
  int spatial = 3;  // the shape's spatial dims (the 3-d view's last `spatial` count)
  // NCDHW x loaded by one tiled TMA box per K tile (conv_igemm_box_tma.cuh): output tiles are
  // boxes of box_h rows by box_w positions (box_tiles_h by box_tiles_w of them per output plane),
  // K ordered (tap, channel) over `channels` (x's padded to 32). box_w 0: tiles of 128
  // consecutive positions.
  bool box_tma = false;
  int box_w = 0, box_h = 0, box_tiles_w = 0, box_tiles_h = 0;
};

// Where box tile tm (p.box_w > 0) lies: its output plane (image · depth + od), first row and
// first column; the boxes run along a plane's rows, then down it, then over the planes.
struct ConvBoxPlace {
  int plane, row, column;
};
__host__ __device__ __forceinline__ ConvBoxPlace conv_box_place(const ConvIgemmParams& p, int tm) {
  const int tw = tm % p.box_tiles_w, rest = tm / p.box_tiles_w;
  return {rest / p.box_tiles_h, rest % p.box_tiles_h * p.box_h, tw * p.box_w};
}

// The output position (m of the GEMM) of row r of output tile tm, or -1 where that row lies past
// the output: 128 consecutive positions per tile, or a box of them (p.box_w > 0,
// conv_igemm_box_tma.cuh).
__host__ __device__ __forceinline__ int conv_tile_position(const ConvIgemmParams& p, int tm,
                                                           int r) {
  if (p.box_w == 0) {
    const int m = tm * kGemmBM + r;
    return m < p.m ? m : -1;
  }
  const ConvBoxPlace box = conv_box_place(p, tm);
  const int oh = box.row + r / p.box_w, ow = box.column + r % p.box_w;
  const int out_h = p.out_hw / p.out_w;
  return oh < out_h && ow < p.out_w ? (box.plane * out_h + oh) * p.out_w + ow : -1;
}

// Which input channel and kernel position a K column is. K ordered (channel, tap) (NCDHW x:
// start, advance; channel >= channels past K) or (tap, channel) (channels-last x: start_taps,
// advance_taps; kd >= kernel[0] past K).
struct ConvKCursor {
  int channel, kd, kh, kw;
  __host__ __device__ __forceinline__ void start(const ConvIgemmParams& p, int k) {
    const int volume = p.kernel[0] * p.kernel[1] * p.kernel[2], hw = p.kernel[1] * p.kernel[2];
    channel = k / volume;
    int rest = k - channel * volume;
    kd = rest / hw;
    rest -= kd * hw;
    kh = rest / p.kernel[2];
    kw = rest - kh * p.kernel[2];
  }
  __host__ __device__ __forceinline__ void advance(const ConvIgemmParams& p) {
    if (++kw == p.kernel[2]) {
      kw = 0;
      if (++kh == p.kernel[1]) {
        kh = 0;
        if (++kd == p.kernel[0]) {
          kd = 0;
          ++channel;
        }
      }
    }
  }
  __host__ __device__ __forceinline__ void start_taps(const ConvIgemmParams& p, int k) {
    const int tap = k / p.channels, hw = p.kernel[1] * p.kernel[2];
    channel = k - tap * p.channels;
    kd = tap / hw;
    const int rest = tap - kd * hw;
    kh = rest / p.kernel[2];
    kw = rest - kh * p.kernel[2];
  }
  __host__ __device__ __forceinline__ void advance_taps(const ConvIgemmParams& p, int columns) {
    for (channel += columns; channel >= p.channels; channel -= p.channels) {
      if (++kw == p.kernel[2]) {
        kw = 0;
        if (++kh == p.kernel[1]) {
          kh = 0;
          ++kd;
        }
      }
    }
  }
};

// One output position's window origin and its image's input (this group's first channel). With
// a channels-last x, `image` is the window origin's channel instead: the pixel (d0·H + h0)·W + w0
// of the image, so that a tap's element lies one distance on for every row (gather_tap_chunks).
// The origin may lie in the padding, before or past the image: the gather reads only where a
// tap's bounds check passes.
struct ConvIgemmRow {
  const float* image;
  int d0, h0, w0;  // d0 far below zero for a row past M: every tap reads as padding
  __host__ __device__ __forceinline__ void start(const ConvIgemmParams& p, int m, int group) {
    image = p.x;
    d0 = -(1 << 30), h0 = 0, w0 = 0;
    if (m >= p.m) return;
    const int img = m / p.out_plane, o = m - img * p.out_plane;
    const int od = o / p.out_hw, ohw = o - od * p.out_hw;
    const int oh = ohw / p.out_w, ow = ohw - oh * p.out_w;
    d0 = od * p.stride[0] - p.pad[0];
    h0 = oh * p.stride[1] - p.pad[1];
    w0 = ow * p.stride[2] - p.pad[2];
    if (p.channels_last) {
      const int64_t origin = (int64_t{d0} * p.in[1] + h0) * p.in[2] + w0;
      image = p.x + img * p.x_image + int64_t{group} * p.channels + origin * p.pixel_stride;
    } else {
      image = p.x + img * p.x_image + int64_t{group} * p.channels * p.in_plane;
    }
  }
};

inline constexpr int kConvIgemmColumnsPerPass = 4;  // K columns of one warp's pass (8 rows each)

// Whether output row r's window reads inside x at tap offsets (dd, dh, dw) (kernel position
// times dilation), not in the padding.
__host__ __device__ __forceinline__ bool conv_tap_inside(const ConvIgemmParams& p,
                                                         const ConvIgemmRow& r, int dd, int dh,
                                                         int dw) {
  return static_cast<unsigned>(r.d0 + dd) < static_cast<unsigned>(p.in[0]) &&
         static_cast<unsigned>(r.h0 + dh) < static_cast<unsigned>(p.in[1]) &&
         static_cast<unsigned>(r.w0 + dw) < static_cast<unsigned>(p.in[2]);
}

// The pixel (id·H + ih)·W + iw that output row r's window reads at tap offsets (dd, dh, dw)
// (kernel position times dilation), or -1 where that tap falls in the padding.
__host__ __device__ __forceinline__ int conv_tap_pixel(const ConvIgemmParams& p,
                                                       const ConvIgemmRow& r, int dd, int dh,
                                                       int dw) {
  const int id = r.d0 + dd, ih = r.h0 + dh, iw = r.w0 + dw;
  return conv_tap_inside(p, r, dd, dh, dw) ? (id * p.in[1] + ih) * p.in[2] + iw : -1;
}

// A thread's part of the A tile [128 positions][32 K columns]: rows `row` + i·kRowStep (i <
// kRows, one ConvIgemmRow each), columns `first_column` + 4j. `cursor` is at K column k0 +
// first_column on entry and is left at k0 + 32 + first_column, the next tile's start.
// sink(tile_row, column, src, ok) moves one element: src is the input element (ok) or padding /
// past K (!ok, src then a valid pointer not to be read). The kernels' sinks are zero-filling
// cp.asyncs; the CPU tests (conv_igemm_plan_test.cu) record the addresses. kPassUnroll: how many
// of the 8 column passes the compiler unrolls (1 where registers are scarce: the wgmma producer's
// 40 spill with all 8).
template <int kRows, int kRowStep, int kPassUnroll, class Sink>
__host__ __device__ __forceinline__ void gather_conv_columns(const ConvIgemmParams& p,
                                                             const ConvIgemmRow (&rows)[kRows],
                                                             int row, int first_column,
                                                             ConvKCursor& cursor, Sink&& sink) {
  STITCH_UNROLL_BY(kPassUnroll)
  for (int j = 0; j < kGemmBK / kConvIgemmColumnsPerPass; ++j) {
    const int column = first_column + j * kConvIgemmColumnsPerPass;
    const bool k_valid = cursor.channel < p.channels;
    const int dd = cursor.kd * p.dilation[0], dh = cursor.kh * p.dilation[1],
              dw = cursor.kw * p.dilation[2];
    STITCH_UNROLL
    for (int i = 0; i < kRows; ++i) {
      const int pixel = conv_tap_pixel(p, rows[i], dd, dh, dw);
      const bool ok = k_valid && pixel >= 0;
      const float* src = ok ? rows[i].image + cursor.channel * p.in_plane + pixel : p.x;
      sink(row + i * kRowStep, column, src, ok);
    }
    STITCH_UNROLL
    for (int step = 0; step < kConvIgemmColumnsPerPass; ++step)
      cursor.advance(p);
  }
}

// The chunks of the cursor's tap for every row of a thread: kChunks 16-byte chunks each, of
// channels cursor.channel + 4c at tile column `column` + 4c. A tap is one distance from each
// row's window origin in a channels-last x (ConvIgemmRow), so its address arithmetic is done once
// here and a chunk costs its bounds check (shared by the tap's chunks of a row) and an add.
template <int kChunks, int kRows, int kRowStep, class Sink>
__host__ __device__ __forceinline__ void gather_tap_chunks(const ConvIgemmParams& p,
                                                           const ConvIgemmRow (&rows)[kRows],
                                                           int row, int column,
                                                           const ConvKCursor& cursor, Sink&& sink) {
  const bool k_valid = cursor.kd < p.kernel[0];
  const int dd = cursor.kd * p.dilation[0], dh = cursor.kh * p.dilation[1],
            dw = cursor.kw * p.dilation[2];
  const int64_t tap_floats =
      ((int64_t{dd} * p.in[1] + dh) * p.in[2] + dw) * p.pixel_stride + cursor.channel;
  STITCH_UNROLL
  for (int i = 0; i < kRows; ++i) {
    const bool ok = k_valid && conv_tap_inside(p, rows[i], dd, dh, dw);
    // Unread where !ok: x's first chunks then (x holds at least kChunks of them: 4 · kChunks
    // channels per pixel).
    const float* src = ok ? rows[i].image + tap_floats : p.x;
    STITCH_UNROLL
    for (int c = 0; c < kChunks; ++c)
      sink(row + i * kRowStep, column + 4 * c, src + 4 * c, ok);
  }
}

// The channels-last gather: 16-byte chunks of 4 K columns (one kernel position's channels c ..
// c + 3, contiguous in x; needs channels % 4 == 0). A thread's chunks of a tile: rows `row` +
// i·kRowStep (i < kRows), columns `first_column` and first_column + 4 (first_column a multiple
// of 8). `cursor` (start_taps) is at K column k0 + first_column on entry and is left at k0 + 32 +
// first_column. sink(tile_row, column, src, ok) moves 4 floats from src (zeros when !ok). With
// channels a multiple of 8 both chunks are of one tap; else each its own, and the two halves stay
// a loop: the wgmma producer's 40 registers spill when they are unrolled.
template <int kRows, int kRowStep, class Sink>
__host__ __device__ __forceinline__ void gather_conv_chunks(const ConvIgemmParams& p,
                                                            const ConvIgemmRow (&rows)[kRows],
                                                            int row, int first_column,
                                                            ConvKCursor& cursor, Sink&& sink) {
  if (p.channels % 8 == 0) {
    gather_tap_chunks<2, kRows, kRowStep>(p, rows, row, first_column, cursor, sink);
    cursor.advance_taps(p, kGemmBK);
    return;
  }
  STITCH_UNROLL_BY(1)
  for (int half = 0; half < 2; ++half) {
    gather_tap_chunks<1, kRows, kRowStep>(p, rows, row, first_column + 4 * half, cursor, sink);
    cursor.advance_taps(p, 4);
  }
  cursor.advance_taps(p, kGemmBK - 8);
}

// Where the GEMM element (m, co) of `group` goes in y: [image, group·N + co, position], the
// position through the output map.
__host__ __device__ __forceinline__ int64_t conv_output_offset(const ConvIgemmParams& p, int group,
                                                               int m, int co) {
  const int img = m / p.out_plane, o = m - img * p.out_plane;
  const int od = o / p.out_hw, ohw = o - od * p.out_hw;
  const int oh = ohw / p.out_w, ow = ohw - oh * p.out_w;
  return img * p.y_image + (int64_t{group} * p.n + co) * p.y_channel + p.y_origin +
         od * p.y_step[0] + oh * p.y_step[1] + ow * p.y_step[2];
}

// transform(plane, act(sum + bias[channel])) of output channel `channel` (every group's) in
// `image`: plane = image · out_channels + channel (plane_transform.cuh).
template <class Transform>
__device__ __forceinline__ float conv_result(const ConvIgemmParams& p, int image, int channel,
                                             float sum, const Transform& transform) {
  if (epilogue_has_bias(p.epilogue)) sum += p.bias[channel];
  return transform(int64_t{image} * p.out_channels + channel, gemm_activation(sum, p.epilogue));
}

// y[image, group·N + co, position] = conv_result for the GEMM element (m, co).
template <class Transform>
__device__ __forceinline__ void store_conv_output(const ConvIgemmParams& p, int group, int m,
                                                  int co, float sum, const Transform& transform) {
  if (m >= p.m || co >= p.n) return;
  p.y[conv_output_offset(p, group, m, co)] =
      conv_result(p, m / p.out_plane, group * p.n + co, sum, transform);
}

}  // namespace detail

namespace detail {

// What is wrong with a convolution shape's rank, batch, channels and groups (ConvIgemmShape,
// ConvTransposeShape), or "".
template <class Shape>
const char* conv_counts_problem(const Shape& s) {
  if (s.spatial < 1 || s.spatial > 3) return "spatial dims must be 1, 2 or 3";
  if (s.batch <= 0 || s.in_channels <= 0 || s.out_channels <= 0 || s.groups <= 0)
    return "batch, channels and groups must be positive";
  if (s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0)
    return "channels must be divisible by groups";
  return "";
}

}  // namespace detail

// "" when the implicit-GEMM kernels run the shape, else what is wrong with it.
inline std::string conv_igemm_shape_problem(const ConvIgemmShape& s) {
  if (const char* bad = detail::conv_counts_problem(s); *bad != '\0') return bad;
  if (s.groups > detail::kConvIgemmMaxGroups) return "more groups than one launch holds";
  int64_t in_plane = 1, out_plane = 1, volume = 1;
  for (int i = 0; i < s.spatial; ++i) {
    // A negative padding crops x (a transposed convolution's phases, conv_transpose_phases.cuh):
    // the gather's bounds checks hold for any window origin.
    if (s.input[i] <= 0 || s.output[i] <= 0 || s.kernel[i] <= 0 || s.stride[i] <= 0 ||
        s.dilation[i] <= 0)
      return "sizes, strides and dilations must be positive";
    const int64_t span =
        s.input[i] + s.pad_before[i] + s.pad_after[i] - s.dilation[i] * (s.kernel[i] - 1) - 1;
    if (span < 0 || span / s.stride[i] + 1 != s.output[i])
      return "output size does not follow from input, kernel, stride, padding and dilation";
    if (s.pad_before[i] > INT32_MAX / 4 || s.pad_before[i] < -(INT32_MAX / 4) ||
        s.stride[i] * s.output[i] > INT32_MAX / 4 ||
        s.dilation[i] * s.kernel[i] > INT32_MAX / 4)
      return "a spatial extent does not fit int32";
    in_plane *= s.input[i];
    out_plane *= s.output[i];
    volume *= s.kernel[i];
  }
  const int64_t k = s.in_channels / s.groups * volume;
  if (s.in_channels * in_plane > INT32_MAX || s.out_channels * out_plane > INT32_MAX ||
      s.batch * out_plane > INT32_MAX || k > INT32_MAX)
    return "an image, the GEMM's M or its K does not fit int32";
  const int64_t tiles = (s.batch * out_plane + detail::kGemmBM - 1) / detail::kGemmBM *
                        ((s.out_channels / s.groups + detail::kGemmBN - 1) / detail::kGemmBN);
  if (tiles > INT32_MAX) return "more output tiles than one launch holds";
  return "";
}

// The most output channels a channel reduction takes (ConvIgemm::set_channel_reduction): one
// output tile of either kernel holds each position's every channel (the wgmma kernel's 64- or
// 128-wide tile, the mma.sync kernel's 128).
inline constexpr int64_t kConvIgemmMaxReducedChannels = detail::kGemmBN;

// "" when the implicit-GEMM kernels run the shape with a reduction over its output channels,
// else why not.
inline std::string conv_igemm_channel_reduction_problem(const ConvIgemmShape& s) {
  if (std::string bad = conv_igemm_shape_problem(s); !bad.empty()) return bad;
  if (s.groups != 1) return "a channel reduction takes one group";
  if (s.out_channels > kConvIgemmMaxReducedChannels)
    return "a channel reduction takes at most " + std::to_string(kConvIgemmMaxReducedChannels) +
           " output channels (one tile's), not " + std::to_string(s.out_channels);
  return "";
}

// The wgmma kernel's output tile width for n output channels per group: 64 where they fit in
// it (a 128-wide tile would compute them half empty); for one product 256 where 256-wide tiles
// cover n with no more padding than 128-wide ones (n mod 256 zero or past 128: 129-256, 385-512,
// ...); else 128 (plan_conv_igemm_wgmma keeps 128 where the 256-wide tiles would want K split).
inline int conv_igemm_wgmma_tile_n(int64_t n, Tf32Products products = Tf32Products::three) {
  if (n <= 64) return 64;
  const bool wide = products == Tf32Products::one && n > 128 && (n + 255) / 256 == (n + 127) / 256;
  return wide ? 256 : 128;
}

namespace detail {

// The wgmma kernel's tile width and plan (output tiles, K split over `sms`: plan_gemm_tf32x3) for
// `groups` GEMMs of m x n x k. requested_tile_n 0 takes conv_igemm_wgmma_tile_n's width, except
// that the 256-wide tile, which runs unsplit (its 128 sums per thread do not fit a split's
// partial tile), gives way to 128 where its plan would split K; requested, it gets one split.
// No split either past kConvIgemmMaxGroups groups x splits (one launch's grid.y).
struct ConvIgemmWgmmaPlan {
  int tile_n = 128;
  GemmTf32x3Plan plan;
};
inline ConvIgemmWgmmaPlan plan_conv_igemm_wgmma(int64_t groups, int64_t m, int64_t n, int64_t k,
                                                int sms, int requested_tile_n,
                                                Tf32Products products) {
  ConvIgemmWgmmaPlan out;
  out.tile_n = requested_tile_n != 0 ? requested_tile_n : conv_igemm_wgmma_tile_n(n, products);
  out.plan = plan_gemm_tf32x3(groups, m, n, k, sms, out.tile_n);
  if (out.tile_n == 256 && out.plan.splits > 1) {
    if (requested_tile_n == 0) out.tile_n = 128;
    out.plan = plan_gemm_tf32x3(groups, m, n, k, out.tile_n == 256 ? 0 : sms, out.tile_n);
  }
  if (groups * out.plan.splits > kConvIgemmMaxGroups)
    out.plan = plan_gemm_tf32x3(groups, m, n, k, 0, out.tile_n);  // one split
  return out;
}

// The kernel's parameters for a shape conv_igemm_shape_problem accepts (pure: tested on the CPU).
inline ConvIgemmParams conv_igemm_params(const float* x, const float* w, const float* bias,
                                         float* y, const ConvIgemmShape& s,
                                         MatmulEpilogue epilogue) {
  const ConvIgemmDims d = conv_igemm_dims(s);
  ConvIgemmParams p;
  p.x = x, p.w = w, p.bias = bias, p.y = y, p.epilogue = epilogue;
  p.channels = static_cast<int>(s.in_channels / s.groups);
  p.n = static_cast<int>(s.out_channels / s.groups);
  p.out_channels = static_cast<int>(s.out_channels);
  int64_t volume = 1;
  for (int i = 0; i < 3; ++i) {
    p.in[i] = static_cast<int>(d.input[i]);
    p.kernel[i] = static_cast<int>(d.kernel[i]);
    p.stride[i] = static_cast<int>(d.stride[i]);
    p.pad[i] = static_cast<int>(d.pad[i]);
    p.dilation[i] = static_cast<int>(d.dilation[i]);
    volume *= d.kernel[i];
  }
  p.k = static_cast<int>(p.channels * volume);
  p.out_w = static_cast<int>(d.output[2]);
  p.out_hw = static_cast<int>(d.output[1] * d.output[2]);
  p.out_plane = static_cast<int>(d.output[0] * p.out_hw);
  p.in_plane = static_cast<int>(d.input[0] * d.input[1] * d.input[2]);
  p.m = static_cast<int>(s.batch * p.out_plane);
  p.x_image = s.in_channels * p.in_plane;
  p.y_image = s.out_channels * p.out_plane;
  p.y_channel = p.out_plane;
  p.y_step[0] = p.out_hw, p.y_step[1] = p.out_w, p.y_step[2] = 1;
  p.tiles_m = (p.m + kGemmBM - 1) / kGemmBM;
  p.tiles_n = (p.n + kGemmBN - 1) / kGemmBN;
  p.spatial = s.spatial;
  return p;
}

inline void conv_igemm_output_map(ConvIgemmParams& p, const ConvIgemmOutputMap& map) {
  p.y_image = map.image_floats, p.y_channel = map.channel_floats, p.y_origin = map.origin;
  for (int i = 0; i < 3; ++i) p.y_step[i] = map.step[i];
}

// y as a channel reduction stores it: one value per output position, [batch, 1, output...].
inline void conv_igemm_reduced_output(ConvIgemmParams& p) {
  p.y_image = p.out_plane;
  p.y_channel = 0;
}

// Whether y's addressing lets adjacent output channels go out as one 8-byte store: channel stride
// 1 (a channels-last y), an even count per group, every other offset even and y 8-byte aligned.
inline bool conv_igemm_pair_stores(const ConvIgemmParams& p) {
  return p.y_channel == 1 && p.n % 2 == 0 && p.y_image % 2 == 0 && p.y_origin % 2 == 0 &&
         p.y_step[0] % 2 == 0 && p.y_step[1] % 2 == 0 && p.y_step[2] % 2 == 0 &&
         reinterpret_cast<uintptr_t>(p.y) % 8 == 0;
}

// The channels per group and position of the channels-last x the chunked gather (16-byte chunks:
// one kernel position's four channels, 16-byte aligned) reads, or 0 where it cannot run the
// shape: the channels per group where they are a multiple of 4; else, with one group, the count
// rounded up to a multiple of 4 where that adds at most a third (3 -> 4, 6 -> 8, 7 -> 8) — x is
// then always read through a copy holding zero channels past the real ones, and the weight's
// split copies zero K columns for them: a third more K work at the chunked gather's several times
// the 4-byte gather's rate (the first layer of an image network: 3 channels).
inline int64_t conv_igemm_gather_channels(const ConvIgemmShape& s) {
  if (s.groups <= 0) return 0;
  const int64_t channels = s.in_channels / s.groups;
  if (channels % 4 == 0) return channels;
  const int64_t padded = (channels + 3) / 4 * 4;
  int64_t volume = 1;
  for (int i = 0; i < s.spatial; ++i)
    volume *= s.kernel[i];
  return s.groups == 1 && 3 * padded <= 4 * channels && padded * volume <= INT32_MAX ? padded : 0;
}

// Whether the channels-last gather can run the shape (conv_igemm_gather_channels).
inline bool conv_igemm_channels_last_eligible(const ConvIgemmShape& s) {
  return conv_igemm_gather_channels(s) != 0;
}

// Whether that gather reads zero channels past x's (a copy of x with them: padding channels).
inline bool conv_igemm_pads_channels(const ConvIgemmShape& s) {
  const int64_t channels = conv_igemm_gather_channels(s);
  return channels != 0 && channels != s.in_channels / s.groups;
}

// The parameters for x in channels-last order (NDHWC, contiguous, conv_igemm_gather_channels per
// group and position) instead of NCDHW: K ordered (tap, channel) over those channels.
inline void conv_igemm_channels_last(ConvIgemmParams& p, const ConvIgemmShape& s) {
  p.channels_last = true;
  p.channels = static_cast<int>(conv_igemm_gather_channels(s));
  p.k = p.channels * p.kernel[0] * p.kernel[1] * p.kernel[2];
  p.pixel_stride = static_cast<int>(p.channels * s.groups);
  p.x_image = int64_t{p.pixel_stride} * p.in_plane;
}

}  // namespace detail

}  // namespace stitch::kernels
