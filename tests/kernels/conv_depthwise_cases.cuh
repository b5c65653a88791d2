// The depthwise convolution shapes kernels/conv_depthwise.cuh is tested on, shared by the CPU test
// of its plan and tiled kernel (conv_depthwise_plan_test.cu, label unit: tile geometry, and whole
// launches emulated thread by thread against a window-order FP32 sum) and the GPU test against a
// double reference (conv_depthwise_test.cu, label gpu). Each case names the path the plan must
// take for a 16-byte aligned x, so the table keeps covering every variant and tiling edge.
#pragma once

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/conv_depthwise.cuh"

namespace stitch::kernels::testing {

struct DepthwiseCase {
  std::string name;
  DepthwiseConv2dShape shape;
  detail::DepthwisePath path = detail::DepthwisePath::fixed_window;
};

// gtest prints a case by its name.
inline void PrintTo(const DepthwiseCase& c, std::ostream* os) {
  *os << c.name;
}

// One stride and dilation for both dims; the output sizes computed as PyTorch does.
inline DepthwiseConv2dShape depthwise_case_shape(int64_t batch, int64_t channels,
                                                 int64_t multiplier, int64_t h, int64_t w,
                                                 int64_t kh, int64_t kw, int64_t stride,
                                                 int64_t top, int64_t left, int64_t bottom,
                                                 int64_t right, int64_t dilation) {
  DepthwiseConv2dShape s;
  s.batch = batch, s.channels = channels, s.multiplier = multiplier;
  s.in_h = h, s.in_w = w, s.kernel_h = kh, s.kernel_w = kw;
  s.stride_h = s.stride_w = stride, s.dilation_h = s.dilation_w = dilation;
  s.pad_top = top, s.pad_left = left, s.pad_bottom = bottom, s.pad_right = right;
  s.out_h = (h + top + bottom - dilation * (kh - 1) - 1) / stride + 1;
  s.out_w = (w + left + right - dilation * (kw - 1) - 1) / stride + 1;
  return s;
}

// Widths that are multiples of 4 (16-byte copies; shifted patch starts) and not (4-byte copies),
// planes narrower than a tile and planes of several tiles across and down (patches overlapping
// their neighbours'), partial last tiles, stride 2 with odd sizes, asymmetric padding, every fixed
// window, 1-d and 1-row kernels (any row stride), multipliers 2 and 3, and the run-time-window
// variant for dilation, stride 3, asymmetric and large windows; one window too large for shared
// memory (the simple kernel).
inline std::vector<DepthwiseCase> depthwise_cases() {
  using P = detail::DepthwisePath;
  auto shape = depthwise_case_shape;
  return {
      {"k3_pad1", shape(2, 16, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"k5_stride2_asymmetric_pad", shape(2, 8, 1, 17, 12, 5, 5, 2, 2, 1, 1, 2, 1)},
      {"asymmetric_kernel_dilation2", shape(1, 6, 1, 20, 16, 3, 5, 1, 2, 4, 2, 4, 2),
       P::any_window},
      {"multiplier3", shape(2, 4, 3, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"wide_rows_two_tiles_across", shape(1, 3, 1, 5, 300, 3, 3, 1, 0, 0, 0, 0, 1)},
      {"k3_tiles_across_and_down", shape(1, 2, 1, 70, 152, 3, 3, 1, 1, 1, 1, 1, 1)},
      {"k5_stride2_odd_sizes", shape(2, 3, 1, 33, 29, 5, 5, 2, 2, 2, 2, 2, 1)},
      {"k3_stride2_asymmetric_pad_aligned", shape(1, 4, 1, 19, 24, 3, 3, 2, 0, 1, 1, 0, 1)},
      {"k7_pad3", shape(1, 2, 1, 30, 32, 7, 7, 1, 3, 3, 3, 3, 1)},
      {"k7_stride2_pad3", shape(1, 2, 1, 31, 44, 7, 7, 2, 3, 3, 3, 3, 1)},
      {"mbconv_k5_stride2_224", shape(1, 2, 1, 224, 224, 5, 5, 2, 2, 2, 2, 2, 1)},
      {"multiplier2_k3_stride2", shape(2, 3, 2, 16, 20, 3, 3, 2, 1, 1, 1, 1, 1)},
      {"one_d_k5_two_tiles", shape(2, 4, 1, 1, 1030, 1, 5, 1, 0, 2, 0, 2, 1)},
      {"one_d_k3_stride2", shape(1, 3, 1, 1, 2048, 1, 3, 2, 0, 1, 0, 1, 1)},
      {"k1x7_rows", shape(1, 2, 1, 12, 40, 1, 7, 1, 0, 3, 0, 3, 1)},
      {"k1x3_stride2_rows", shape(1, 2, 1, 9, 20, 1, 3, 2, 0, 1, 0, 1, 1)},
      {"one_d_k9_any", shape(1, 2, 1, 1, 500, 1, 9, 1, 0, 4, 0, 4, 1), P::any_window},
      {"k3_dilation2", shape(1, 3, 1, 24, 24, 3, 3, 1, 2, 2, 2, 2, 2), P::any_window},
      {"k3_stride3", shape(1, 2, 1, 20, 21, 3, 3, 3, 1, 1, 1, 1, 1), P::any_window},
      {"k3x5", shape(1, 2, 1, 15, 18, 3, 5, 1, 1, 2, 1, 2, 1), P::any_window},
      {"k31_large_window", shape(1, 2, 1, 64, 64, 31, 31, 1, 15, 15, 15, 15, 1), P::any_window},
      {"k101_beyond_shared_memory", shape(1, 1, 1, 100, 100, 101, 101, 1, 50, 50, 50, 50, 1),
       P::simple},
  };
}

// An input transform as a fused training-mode BatchNorm gives the kernel: a per-plane affine map
// and a clamp to [0, 6] (ReLU6). It maps 0 to 0.5: a kernel that transformed its padding would
// show. `transformed` applies it to a whole NCHW x on the host.
struct PlaneAffineRelu6 {
  int64_t channels = 1;
  __host__ __device__ float operator()(int64_t plane, float x) const {
    const float scale = 1.0f + 0.25f * static_cast<float>(plane % 5);              // per (n, c)
    const float shift = 0.5f - 0.125f * static_cast<float>(plane % channels % 3);  // per c
    return fminf(fmaxf(x * scale + shift, 0.0f), 6.0f);
  }
};
inline std::vector<float> transformed(const DepthwiseConv2dShape& s, const std::vector<float>& x,
                                      const PlaneAffineRelu6& transform) {
  std::vector<float> out(x.size());
  const int64_t plane_size = s.in_h * s.in_w;
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = transform(static_cast<int64_t>(i) / plane_size, x[i]);
  return out;
}

}  // namespace stitch::kernels::testing
