// A direct depthwise 2-D convolution (groups == in_channels; out_channels = in_channels x
// multiplier), forward, NCHW contiguous FP32, with stride, padding before/after and dilation; a
// 1-d convolution is one of height 1. Each output is the plain FP32 sum of its window's products
// added in window order (row-major taps) with fmaf — the fp32 track's contract, no tensor cores.
//
//   launch_depthwise_conv2d(x, w, y, shape, stream, block, transform)  — y = conv(transform(x), w),
//   w [C * multiplier, 1, kh, kw]; transform per input element, the identity by default (a
//   BatchNorm's normalisation and activation fused in: no pass writes the normalised tensor)
//
// Depthwise convolutions do a few multiply-adds per element read: they are memory bound, and the
// kernel's job is to read x once, coalesced. The tiled kernel gives each block one tile of output
// positions (whole rows when the plane is narrow) of one input channel's plane, for every output
// channel of that input channel (the multiplier). Its threads copy the input patch under the tile's
// windows into shared memory once — 16-byte loads where the rows are 16-byte aligned, zeros for
// the padding — then each thread computes a few outputs from shared memory (plan and geometry:
// conv_depthwise_tile.cuh, pure and checked on the CPU by conv_depthwise_plan_test.cu):
//   - fixed windows (3x3, 5x5, 7x7 at stride 1 or 2; 1x3, 1x5, 1x7 rows; dilation 1): the window a
//     compile-time constant, the weights in registers; a thread walks a strip of up to 8
//     consecutive output rows, each input row read from shared memory once and added to every
//     open window it falls in (1-row kernels: 4 columns per thread instead); at stride 2, even and
//     odd input columns are kept apart in shared memory so that a warp's reads are free of bank
//     conflicts;
//   - any other window, stride or dilation: the same tiles, up to 4 output rows per thread, the
//     window's sizes read at run time and its weights through the read-only cache.
// Where the patch of even the smallest tile would not fit in kDepthwiseSharedBytes (48 KiB, so no
// opt-in attribute is needed: very large or very dilated windows), or a plane is too large for
// 32-bit index arithmetic, the simple kernel runs instead: one thread per output, its window read
// from global memory through L1, 64-bit indices.
//
// No allocation, no synchronisation: CUDA-graph capturable. depthwise_shape_problem (host) says
// what is wrong with a shape, "" if nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "conv_depthwise_tile.cuh"
#include "runtime.cuh"

namespace stitch::kernels {

inline std::string depthwise_shape_problem(const DepthwiseConv2dShape& s) {
  if (s.batch <= 0 || s.channels <= 0 || s.multiplier <= 0 || s.in_h <= 0 || s.in_w <= 0 ||
      s.out_h <= 0 || s.out_w <= 0 || s.kernel_h <= 0 || s.kernel_w <= 0)
    return "sizes must be positive";
  if (s.stride_h <= 0 || s.stride_w <= 0 || s.dilation_h <= 0 || s.dilation_w <= 0 ||
      s.pad_top < 0 || s.pad_left < 0 || s.pad_bottom < 0 || s.pad_right < 0)
    return "strides and dilations must be positive, paddings non-negative";
  const int64_t h =
      (s.in_h + s.pad_top + s.pad_bottom - s.dilation_h * (s.kernel_h - 1) - 1) / s.stride_h + 1;
  const int64_t w =
      (s.in_w + s.pad_left + s.pad_right - s.dilation_w * (s.kernel_w - 1) - 1) / s.stride_w + 1;
  if (h != s.out_h || w != s.out_w)
    return "output size does not follow from input, kernel, stride, padding and dilation";
  return "";
}

namespace detail {

// No __launch_bounds__: with it ptxas aims lower and spills (1x5 stride 2, any window); without,
// no variant spills on sm_80 / sm_90a / sm_100a (40-95 registers, 7x7 the most).
template <class Window, class Transform>
__global__ void depthwise_conv2d_tiled_kernel(const float* __restrict__ x,
                                              const float* __restrict__ w, float* __restrict__ y,
                                              DepthwiseParams p, const Transform transform) {
  extern __shared__ float4 shared_patch[];  // float4: 16-byte aligned rows for the vector stores
  float* patch = reinterpret_cast<float*>(shared_patch);
  const DepthwiseTile tile = depthwise_tile(p, blockIdx.x);
  depthwise_load_patch<Window::kPhases>(p, tile,
                                        x + static_cast<int64_t>(tile.in_plane) * p.in_h * p.in_w,
                                        threadIdx.x, patch, transform);
  __syncthreads();
  depthwise_compute_tile<Window>(p, tile, patch, w, y, threadIdx.x);
}

// The fallback: a thread per output element, grid-stride, 64-bit indices, the window read from
// global memory (any window, any plane size).
template <class Transform>
__global__ void depthwise_conv2d_simple_kernel(const float* __restrict__ x,
                                               const float* __restrict__ w, float* __restrict__ y,
                                               DepthwiseConv2dShape s, int64_t total,
                                               const Transform transform) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t ow = e % s.out_w;
    const int64_t oh = (e / s.out_w) % s.out_h;
    const int64_t plane = e / (s.out_w * s.out_h);  // n * K + k
    const int64_t k = plane % (s.channels * s.multiplier);
    const int64_t n = plane / (s.channels * s.multiplier);
    const int64_t in_plane = n * s.channels + k / s.multiplier;
    const float* xp = x + in_plane * s.in_h * s.in_w;
    const float* wp = w + k * s.kernel_h * s.kernel_w;
    const int64_t h0 = oh * s.stride_h - s.pad_top, w0 = ow * s.stride_w - s.pad_left;
    float acc = 0.f;
    for (int64_t i = 0; i < s.kernel_h; ++i) {
      const int64_t ih = h0 + i * s.dilation_h;
      if (ih < 0 || ih >= s.in_h) continue;
      for (int64_t j = 0; j < s.kernel_w; ++j) {
        const int64_t iw = w0 + j * s.dilation_w;
        if (iw < 0 || iw >= s.in_w) continue;
        acc = fmaf(transform(in_plane, __ldg(xp + ih * s.in_w + iw)),
                   __ldg(wp + i * s.kernel_w + j), acc);
      }
    }
    y[e] = acc;
  }
}

// The simple kernel alone (the launcher's fallback; the bench times it as the baseline).
template <class Transform = PlaneIdentity>
inline int launch_depthwise_conv2d_simple(const float* x, const float* w, float* y,
                                          const DepthwiseConv2dShape& shape, cudaStream_t stream,
                                          int block, const Transform& transform = {}) {
  const int64_t total = shape.batch * shape.channels * shape.multiplier * shape.out_h * shape.out_w;
  int64_t grid = 0;
  const cudaError_t sized = grid_stride_blocks(total, block, grid);
  if (sized != cudaSuccess) return sized;
  depthwise_conv2d_simple_kernel<Transform>
      <<<static_cast<unsigned>(grid), block, 0, stream>>>(x, w, y, shape, total, transform);
  return cudaGetLastError();
}

}  // namespace detail

// `block`: the most threads a block takes (the tiled kernel rounds it down to whole warps, at
// most kDepthwiseMaxThreads; the simple kernel takes it as given). `transform`: applied to each
// input element before the convolution (plane_transform.cuh says how), padding left zero.
// cudaErrorInvalidValue for a shape depthwise_shape_problem refuses, null pointers or a block
// outside 1..1024; else the launch's status.
template <class Transform = detail::PlaneIdentity>
inline int launch_depthwise_conv2d(const float* x, const float* w, float* y,
                                   const DepthwiseConv2dShape& shape, cudaStream_t stream,
                                   int block = 256, const Transform& transform = {}) {
  static_assert(std::is_trivially_copyable_v<Transform>, "the transform is passed by value");
  if (x == nullptr || w == nullptr || y == nullptr || !depthwise_shape_problem(shape).empty() ||
      block <= 0 || block > 1024)
    return cudaErrorInvalidValue;
  const bool x_aligned = reinterpret_cast<uintptr_t>(x) % 16 == 0;
  const detail::DepthwisePlan plan = detail::plan_depthwise_conv2d(shape, x_aligned, block);
  if (plan.path == detail::DepthwisePath::simple)
    return detail::launch_depthwise_conv2d_simple(x, w, y, shape, stream, block, transform);
  const detail::DepthwiseTiling& t = plan.params.tiling;
  return detail::visit_depthwise_window(plan.params, [&](auto window) -> int {
    detail::depthwise_conv2d_tiled_kernel<decltype(window), Transform>
        <<<static_cast<unsigned>(plan.blocks), t.threads, t.shared_bytes, stream>>>(
            x, w, y, plan.params, transform);
    return cudaGetLastError();
  });
}

}  // namespace stitch::kernels
