// FP32-accurate convolution on TF32 tensor cores: an implicit-GEMM forward convolution with the
// split-precision 3xTF32 arithmetic of the GEMM kernel (gemm_tf32x3.cuh), for the fp32 track's
// convolutions, where cuDNN offers only strict FP32 (no tensor cores) or plain TF32 (not FP32
// accurate).
//
// GEMM view, per group g: D[m, co] = sum_k A[m, k] · B[co, k], with
//   m  = (image, output position)              M = batch · prod(output)
//   co = output channel within the group       N = out_channels / groups
//   k  = (input channel within the group, kernel position)  K = in_channels / groups · prod(kernel)
// B is the weight as PyTorch holds it, [out_channels, in_channels / groups, kernel...] contiguous:
// row co of group g is K contiguous floats (the GEMM kernel's transposed-B operand, loaded by its
// load_k_contiguous). A is never materialised: each A tile is gathered from the NCDHW input while
// it is loaded (im2col in the load), with zeros for padding and for positions past K, any stride
// and dilation; no workspace. 1-d and 2-d convolutions run as 3-d ones with unit leading dims.
//
// Arithmetic and tiling are the mma.sync GEMM's, reused from gemm_tf32x3.cuh and
// gemm_tf32x3_common.cuh: 128 x 128 output tiles (positions x channels), 8 warps of 64 x 32, K
// tiles of 32 in a 4-stage cp.async ring, each element split where it is used (big = tf32(x),
// small = tf32(x - big); small·big + big·small + big·big on the tensor cores, multiply_tile), each
// K tile's tensor-core sum added to the FP32 accumulator with round-to-nearest on the CUDA cores.
// So the error is the GEMM kernel's: FP32 level, judged by the fp32 track's error norm.
//
// The gather: a thread owns two tile rows (r and r + 64, with its position's image base pointer
// and window origin precomputed) and every fourth K column of the tile; it walks the K columns
// with an incremental (channel, kd, kh, kw) cursor (two divisions per K tile, none per element).
// Eight lanes take eight consecutive rows of one column (output positions: a 32-byte run of the
// input at stride 1), so a warp's 4-byte cp.asyncs touch 4 sectors; the shared tile row of 40
// floats makes that a 2-way bank conflict on the write.
//
// Fused epilogue: y = act(conv + bias[co]) with MatmulEpilogue's activations (none / ReLU / GELU,
// tanh form) as the GEMM's. Speed is not measured yet (no GPU in the session that wrote it):
// tests/kernels/conv_igemm_tf32x3_bench.cu prints it against cuDNN strict FP32 and TF32 on an
// H200; the planner's kConvIgemmEfficiency (src/plan/kernel_choice.h) is to take the figure.
//
// Built for sm_80 and later (mma.sync m16n8k8 TF32), sm_90a included: it needs no wgmma.
// prepare_conv_igemm_tf32x3 (once, at init) allows the shared memory; launch_conv_igemm_tf32x3
// then allocates and synchronises nothing (CUDA-graph capturable).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gemm_tf32x3.cuh"
#include "gemm_tf32x3_common.cuh"
#include "matmul.cuh"
#include "runtime.cuh"

// Unrolling in the functions the CPU tests also run (host compilers do not know the pragma).
#if defined(__CUDA_ARCH__)
#define STITCH_CONV_IGEMM_UNROLL _Pragma("unroll")
#else
#define STITCH_CONV_IGEMM_UNROLL
#endif

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

namespace detail {

inline constexpr int kConvIgemmMaxGroups = 65535;  // grid.y

// The 3-d view: index 0 depth, 1 height, 2 width; unit sizes in front of a 1-d or 2-d shape.
struct ConvIgemmDims {
  int64_t input[3], output[3], kernel[3], stride[3], pad[3], dilation[3];
};
inline ConvIgemmDims conv_igemm_dims(const ConvIgemmShape& s) {
  ConvIgemmDims d;
  for (int i = 0; i < 3; ++i) {
    const int src = i - (3 - s.spatial);
    const bool unit = src < 0;
    d.input[i] = unit ? 1 : s.input[src];
    d.output[i] = unit ? 1 : s.output[src];
    d.kernel[i] = unit ? 1 : s.kernel[src];
    d.stride[i] = unit ? 1 : s.stride[src];
    d.pad[i] = unit ? 0 : s.pad_before[src];
    d.dilation[i] = unit ? 1 : s.dilation[src];
  }
  return d;
}

// What the kernel reads; int where every index fits 31 bits (conv_igemm_shape_problem checks).
struct ConvIgemmParams {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;
  float* y = nullptr;
  int m = 0, n = 0, k = 0;  // the per-group GEMM
  int channels = 0;         // input channels per group
  int in[3] = {}, out_hw = 0, out_w = 0, kernel[3] = {}, stride[3] = {}, pad[3] = {},
      dilation[3] = {};
  int in_plane = 0, out_plane = 0;   // positions per channel
  int64_t x_image = 0, y_image = 0;  // floats per image
  int tiles_m = 0, tiles_n = 0;
  MatmulEpilogue epilogue = MatmulEpilogue::none;
};

// Which input channel and kernel position a K column is; channel >= channels past K.
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
};

// One output position's window origin and its image's input (this group's channels).
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
    image = p.x + img * p.x_image + int64_t{group} * p.channels * p.in_plane;
    d0 = od * p.stride[0] - p.pad[0];
    h0 = oh * p.stride[1] - p.pad[1];
    w0 = ow * p.stride[2] - p.pad[2];
  }
};

inline constexpr int kConvIgemmColumnsPerPass = 4;  // K columns of one warp's pass (8 rows each)

// The A tile [128 positions][32 K columns from k0]: this thread's rows `row` and `row` + 64,
// columns `first_column` + 4j. sink(tile_row, column, src, ok) moves one element: src is the
// input element (ok) or padding / past K (!ok, src then a valid pointer not to be read). The
// kernel's sink is a zero-filling cp.async; the CPU tests (plans_test.cu) record the addresses.
template <class Sink>
__host__ __device__ __forceinline__ void gather_conv_tile(const ConvIgemmParams& p,
                                                          const ConvIgemmRow (&rows)[2], int row,
                                                          int first_column, int k0, Sink&& sink) {
  ConvKCursor cursor;
  cursor.start(p, k0 + first_column);
  STITCH_CONV_IGEMM_UNROLL
  for (int j = 0; j < kGemmBK / kConvIgemmColumnsPerPass; ++j) {
    const int column = first_column + j * kConvIgemmColumnsPerPass;
    const bool k_valid = cursor.channel < p.channels;
    const int dd = cursor.kd * p.dilation[0], dh = cursor.kh * p.dilation[1],
              dw = cursor.kw * p.dilation[2];
    STITCH_CONV_IGEMM_UNROLL
    for (int half = 0; half < 2; ++half) {
      const ConvIgemmRow& r = rows[half];
      const int id = r.d0 + dd, ih = r.h0 + dh, iw = r.w0 + dw;
      const bool ok = k_valid && static_cast<unsigned>(id) < static_cast<unsigned>(p.in[0]) &&
                      static_cast<unsigned>(ih) < static_cast<unsigned>(p.in[1]) &&
                      static_cast<unsigned>(iw) < static_cast<unsigned>(p.in[2]);
      const float* src =
          ok ? r.image + cursor.channel * p.in_plane + (id * p.in[1] + ih) * p.in[2] + iw : p.x;
      sink(row + half * 64, column, src, ok);
    }
    STITCH_CONV_IGEMM_UNROLL
    for (int step = 0; step < kConvIgemmColumnsPerPass; ++step)
      cursor.advance(p);
  }
}

// Where the GEMM element (m, co) of `group` goes in y: [image, group·N + co, position].
__host__ __device__ __forceinline__ int64_t conv_output_offset(const ConvIgemmParams& p, int group,
                                                               int m, int co) {
  const int img = m / p.out_plane, o = m - img * p.out_plane;
  return img * p.y_image + (int64_t{group} * p.n + co) * p.out_plane + o;
}

// y[image, group·N + co, position] = act(sum + bias) for the GEMM element (m, co).
__device__ __forceinline__ void store_conv_output(const ConvIgemmParams& p, int group, int m,
                                                  int co, float sum) {
  if (m >= p.m || co >= p.n) return;
  float v = sum;
  if (p.epilogue == MatmulEpilogue::bias || p.epilogue == MatmulEpilogue::bias_relu ||
      p.epilogue == MatmulEpilogue::bias_gelu)
    v += p.bias[group * p.n + co];
  p.y[conv_output_offset(p, group, m, co)] = gemm_activation(v, p.epilogue);
}

template <bool kVec4Weights>
__global__ void __launch_bounds__(kGemmThreads, 1) conv_igemm_tf32x3_kernel(ConvIgemmParams p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  extern __shared__ float4 conv_smem[];
  float* smem = reinterpret_cast<float*>(conv_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, wm = warp >> 2, wn = warp & 3;
  GemmTf32x3Args order;  // the GEMM's grouped tile order (only the tile counts are read)
  order.tiles_m = p.tiles_m, order.tiles_n = p.tiles_n, order.splits = 1;
  const GemmTileCoord tile = gemm_tile_coord(order);
  const int group = static_cast<int>(blockIdx.y);
  const int m0 = tile.tm * kGemmBM, n0 = tile.tn * kGemmBN;
  const float* w = p.w + (int64_t{group} * p.n + n0) * p.k;
  const int cols_b = min(kGemmBN, p.n - n0);
  const int k_tiles = (p.k + kGemmBK - 1) / kGemmBK;

  const int gather_row = warp * 8 + (lane & 7), gather_column = lane >> 3;
  ConvIgemmRow rows[2];
  rows[0].start(p, m0 + gather_row, group);
  rows[1].start(p, m0 + gather_row + 64, group);

  auto load = [&](int kt) {
    float* stage = smem + (kt % kGemmStages) * kGemmStageFloats;
    const int k0 = kt * kGemmBK;
    gather_conv_tile(p, rows, gather_row, gather_column, k0,
                     [stage](int tile_row, int column, const float* src, bool ok) {
                       cp_async_4(stage + tile_row * kGemmLdK + column, src, ok);
                     });
    load_k_contiguous<kVec4Weights>(stage + kGemmTileFloats, w, p.k, cols_b, k0, p.k, tid);
  };
  float acc[4][4][4] = {};
  multiply_tiles<true>(smem, k_tiles, load, wm, wn, g, t, acc);
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        store_conv_output(p, group, m0 + wm * 64 + i * 16 + g + (r >> 1) * 8,
                          n0 + wn * 32 + j * 8 + 2 * t + (r & 1), acc[i][j][r]);
#else
  (void)p;
#endif
}

}  // namespace detail

// "" when launch_conv_igemm_tf32x3 runs the shape, else what is wrong with it.
inline std::string conv_igemm_shape_problem(const ConvIgemmShape& s) {
  if (s.spatial < 1 || s.spatial > 3) return "spatial dims must be 1, 2 or 3";
  if (s.batch <= 0 || s.in_channels <= 0 || s.out_channels <= 0 || s.groups <= 0)
    return "batch, channels and groups must be positive";
  if (s.in_channels % s.groups != 0 || s.out_channels % s.groups != 0)
    return "channels must be divisible by groups";
  if (s.groups > detail::kConvIgemmMaxGroups) return "more groups than one launch holds";
  int64_t in_plane = 1, out_plane = 1, volume = 1;
  for (int i = 0; i < s.spatial; ++i) {
    if (s.input[i] <= 0 || s.output[i] <= 0 || s.kernel[i] <= 0 || s.stride[i] <= 0 ||
        s.dilation[i] <= 0 || s.pad_before[i] < 0 || s.pad_after[i] < 0)
      return "sizes, strides and dilations must be positive, paddings non-negative";
    const int64_t span =
        s.input[i] + s.pad_before[i] + s.pad_after[i] - s.dilation[i] * (s.kernel[i] - 1) - 1;
    if (span < 0 || span / s.stride[i] + 1 != s.output[i])
      return "output size does not follow from input, kernel, stride, padding and dilation";
    if (s.pad_before[i] > INT32_MAX / 4 || s.stride[i] * s.output[i] > INT32_MAX / 4 ||
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

namespace detail {

// The kernel's parameters for a shape conv_igemm_shape_problem accepts (pure: tested on the CPU).
inline ConvIgemmParams conv_igemm_params(const float* x, const float* w, const float* bias,
                                         float* y, const ConvIgemmShape& s,
                                         MatmulEpilogue epilogue) {
  const ConvIgemmDims d = conv_igemm_dims(s);
  ConvIgemmParams p;
  p.x = x, p.w = w, p.bias = bias, p.y = y, p.epilogue = epilogue;
  p.channels = static_cast<int>(s.in_channels / s.groups);
  p.n = static_cast<int>(s.out_channels / s.groups);
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
  p.tiles_m = (p.m + kGemmBM - 1) / kGemmBM;
  p.tiles_n = (p.n + kGemmBN - 1) / kGemmBN;
  return p;
}

}  // namespace detail

// Lets the kernels use their 160 KiB of dynamic shared memory on the current device. Once per
// device before the first launch, outside any graph capture (a generated program calls it at
// init); the launch fails without it.
inline cudaError_t prepare_conv_igemm_tf32x3() {
  const int smem = static_cast<int>(detail::kGemmSmemBytes);
  cudaError_t status = cudaFuncSetAttribute(detail::conv_igemm_tf32x3_kernel<true>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (status == cudaSuccess)
    status = cudaFuncSetAttribute(detail::conv_igemm_tf32x3_kernel<false>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  return status;
}

// y = act(conv(x, w) + bias), FP32-accurate (3xTF32), after prepare_conv_igemm_tf32x3. x [batch,
// in_channels, input...], w [out_channels, in_channels / groups, kernel...], y [batch,
// out_channels, output...], all contiguous; bias [out_channels] when `epilogue` has one (else
// ignored). cudaErrorInvalidValue for a shape conv_igemm_shape_problem refuses or a missing
// pointer; else the launch's status.
inline int launch_conv_igemm_tf32x3(const float* x, const float* w, const float* bias, float* y,
                                    const ConvIgemmShape& s, MatmulEpilogue epilogue,
                                    cudaStream_t stream) {
  if (x == nullptr || w == nullptr || y == nullptr ||
      (epilogue_has_bias(epilogue) && bias == nullptr) || !conv_igemm_shape_problem(s).empty())
    return cudaErrorInvalidValue;
  const detail::ConvIgemmParams p = detail::conv_igemm_params(x, w, bias, y, s, epilogue);
  const dim3 grid(static_cast<unsigned>(int64_t{p.tiles_m} * p.tiles_n),
                  static_cast<unsigned>(s.groups));
  // 16-byte weight loads: every weight row (K floats) starts 16-byte aligned.
  const bool vec4 = p.k % 4 == 0 && detail::is_aligned(w, 16);
  const size_t smem = detail::kGemmSmemBytes;
  if (vec4)
    detail::conv_igemm_tf32x3_kernel<true><<<grid, detail::kGemmThreads, smem, stream>>>(p);
  else
    detail::conv_igemm_tf32x3_kernel<false><<<grid, detail::kGemmThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace stitch::kernels
