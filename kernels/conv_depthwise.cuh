// A direct depthwise 2-D convolution (groups == in_channels; out_channels = in_channels x
// multiplier), forward, NCHW contiguous FP32, with stride, padding before/after and dilation: one
// thread per output element, the window's products added in order in FP32 (fmaf), the accuracy of
// a plain FP32 dot product — the fp32 track's contract, with no tensor cores. Depthwise
// convolutions do a few multiply-adds per element read, so the kernel is memory bound: threads of
// a warp take consecutive output columns, and their window reads are coalesced up to the stride.
//
//   launch_depthwise_conv2d(x, w, y, shape, stream)  — y = conv(x, w), w [C * multiplier, 1, kh,
//   kw]
//
// Grid-stride over a grid of one full wave of resident blocks; no allocation, no synchronisation:
// CUDA-graph capturable. depthwise_shape_problem (host) says what is wrong with a shape, "" if
// nothing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "runtime.cuh"

namespace stitch::kernels {

struct DepthwiseConv2dShape {
  int64_t batch = 1, channels = 0, multiplier = 1;  // out channels = channels * multiplier
  int64_t in_h = 0, in_w = 0, out_h = 0, out_w = 0, kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
};

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

__global__ void depthwise_conv2d_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                        float* __restrict__ y, DepthwiseConv2dShape s,
                                        int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t ow = e % s.out_w;
    const int64_t oh = (e / s.out_w) % s.out_h;
    const int64_t plane = e / (s.out_w * s.out_h);  // n * K + k
    const int64_t k = plane % (s.channels * s.multiplier);
    const int64_t n = plane / (s.channels * s.multiplier);
    const float* xp = x + (n * s.channels + k / s.multiplier) * s.in_h * s.in_w;
    const float* wp = w + k * s.kernel_h * s.kernel_w;
    const int64_t h0 = oh * s.stride_h - s.pad_top, w0 = ow * s.stride_w - s.pad_left;
    float acc = 0.f;
    for (int64_t i = 0; i < s.kernel_h; ++i) {
      const int64_t ih = h0 + i * s.dilation_h;
      if (ih < 0 || ih >= s.in_h) continue;
      for (int64_t j = 0; j < s.kernel_w; ++j) {
        const int64_t iw = w0 + j * s.dilation_w;
        if (iw < 0 || iw >= s.in_w) continue;
        acc = fmaf(__ldg(xp + ih * s.in_w + iw), __ldg(wp + i * s.kernel_w + j), acc);
      }
    }
    y[e] = acc;
  }
}

}  // namespace detail

// cudaErrorInvalidValue for a shape depthwise_shape_problem refuses or null pointers; else the
// launch's status.
inline int launch_depthwise_conv2d(const float* x, const float* w, float* y,
                                   const DepthwiseConv2dShape& shape, cudaStream_t stream,
                                   int block = 256) {
  if (x == nullptr || w == nullptr || y == nullptr || !depthwise_shape_problem(shape).empty() ||
      block <= 0 || block > 1024)
    return cudaErrorInvalidValue;
  const int64_t total = shape.batch * shape.channels * shape.multiplier * shape.out_h * shape.out_w;
  int64_t grid = 0;
  const cudaError_t sized = grid_stride_blocks(total, block, grid);
  if (sized != cudaSuccess) return sized;
  detail::depthwise_conv2d_kernel<<<static_cast<unsigned>(grid), block, 0, stream>>>(x, w, y, shape,
                                                                                     total);
  return cudaGetLastError();
}

}  // namespace stitch::kernels
