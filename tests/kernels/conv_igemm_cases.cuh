// The convolution shapes kernels/conv_igemm_tf32x3.cuh is tested on, shared by the CPU test of its
// gathers and output addressing (conv_igemm_plan_test.cu, label unit) and the GPU test against a
// double reference (conv_igemm_tf32x3_test.cu, label gpu): so every shape the GPU checks by value
// has its addressing checked without a GPU too. Also the double reference (with each output's
// sum of |terms| as a tolerance scale) the GPU tests of both convolution kernels compare with.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "kernel_test_support.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"

namespace stitch::kernels::testing {

struct ConvIgemmCase {
  std::string name;
  ConvIgemmShape shape;
  MatmulEpilogue epilogue = MatmulEpilogue::none;
};

// gtest prints a case by its name.
inline void PrintTo(const ConvIgemmCase& c, std::ostream* os) {
  *os << c.name;
}

// The shape with its output sizes computed as PyTorch does. A list of one value holds for every
// spatial dim; empty lists: stride and dilation 1, padding 0 (pad_after: pad_before).
inline ConvIgemmShape conv_case_shape(int64_t batch, int64_t in_channels, int64_t out_channels,
                                      int64_t groups, const std::vector<int64_t>& input,
                                      const std::vector<int64_t>& kernel,
                                      const std::vector<int64_t>& stride = {},
                                      const std::vector<int64_t>& pad_before = {},
                                      const std::vector<int64_t>& pad_after = {},
                                      const std::vector<int64_t>& dilation = {}) {
  ConvIgemmShape s;
  s.spatial = static_cast<int>(input.size());
  s.batch = batch, s.in_channels = in_channels, s.out_channels = out_channels, s.groups = groups;
  auto at = [](const std::vector<int64_t>& v, size_t i, int64_t otherwise) {
    return v.empty() ? otherwise : v.size() == 1 ? v[0] : v[i];
  };
  for (size_t i = 0; i < input.size(); ++i) {
    s.input[i] = input[i];
    s.kernel[i] = at(kernel, i, 1);
    s.stride[i] = at(stride, i, 1);
    s.pad_before[i] = at(pad_before, i, 0);
    s.pad_after[i] = at(pad_after, i, s.pad_before[i]);
    s.dilation[i] = at(dilation, i, 1);
    s.output[i] =
        (s.input[i] + s.pad_before[i] + s.pad_after[i] - s.dilation[i] * (s.kernel[i] - 1) - 1) /
            s.stride[i] +
        1;
  }
  return s;
}

inline int64_t conv_input_elements(const ConvIgemmShape& s) {
  int64_t n = s.batch * s.in_channels;
  for (int i = 0; i < s.spatial; ++i)
    n *= s.input[i];
  return n;
}
inline int64_t conv_weight_elements(const ConvIgemmShape& s) {
  int64_t n = s.out_channels * (s.in_channels / s.groups);
  for (int i = 0; i < s.spatial; ++i)
    n *= s.kernel[i];
  return n;
}
inline int64_t conv_output_elements(const ConvIgemmShape& s) {
  int64_t n = s.batch * s.out_channels;
  for (int i = 0; i < s.spatial; ++i)
    n *= s.output[i];
  return n;
}

// 1x1, 3x3 stride 1 / 2, 5x5 pad 2, the ResNet stem, AlexNet's 11x11 stride 4, dilation,
// asymmetric padding, channel counts that are not multiples of the tile (K not a multiple of 4:
// the 4-byte weight loads; 3, 6 and 7 channels padded to 4 or 8 for the chunked gather), more
// than one channel tile (and than one 256-wide tile), a 1x1 output, negative padding, batch 8,
// 1-d, 3-d, groups, long K, the fused epilogues.
inline std::vector<ConvIgemmCase> conv_igemm_cases() {
  using E = MatmulEpilogue;
  return {
      {"k1x1", conv_case_shape(2, 64, 96, 1, {14, 14}, {1})},
      {"k3_stride1_pad1", conv_case_shape(1, 32, 64, 1, {20, 20}, {3}, {1}, {1})},
      {"k3_stride2_pad1", conv_case_shape(2, 24, 48, 1, {17, 17}, {3}, {2}, {1})},
      {"k5_pad2", conv_case_shape(1, 8, 16, 1, {12, 12}, {5}, {1}, {2})},
      {"resnet_stem_k7_stride2_pad3", conv_case_shape(1, 3, 64, 1, {64, 64}, {7}, {2}, {3})},
      // AlexNet's first layer, smaller: 3 channels padded to 4 for the chunked gather.
      {"alexnet_k11_stride4_pad2", conv_case_shape(2, 3, 96, 1, {67, 67}, {11}, {4}, {2})},
      {"k3_dilation2", conv_case_shape(1, 16, 32, 1, {15, 15}, {3}, {1}, {2}, {2}, {2})},
      {"asymmetric_padding",
       conv_case_shape(2, 6, 10, 1, {11, 13}, {3, 2}, {1, 2}, {0, 1}, {2, 1})},
      {"odd_channels_two_channel_tiles", conv_case_shape(1, 5, 130, 1, {9, 9}, {3}, {1}, {1})},
      // 300 channels: one product's 256-wide tiles, the second two-thirds empty (forced).
      {"channels_300_two_wide_tiles", conv_case_shape(1, 20, 300, 1, {10, 10}, {3}, {1}, {1})},
      {"output_1x1", conv_case_shape(3, 7, 9, 1, {3, 3}, {3})},
      // A transposed convolution's phase crops x by a negative padding.
      {"negative_padding_crops",
       conv_case_shape(2, 8, 16, 1, {12, 11}, {3, 2}, {1}, {-1, 1}, {-2, -1}, {1, 2})},
      {"batch8", conv_case_shape(8, 16, 32, 1, {16, 16}, {3}, {1}, {1})},
      {"conv1d_k5_stride2", conv_case_shape(2, 12, 20, 1, {50}, {5}, {2}, {2})},
      {"conv3d_k3", conv_case_shape(1, 4, 8, 1, {6, 7, 8}, {3}, {1, 2, 1}, {1})},
      {"groups4", conv_case_shape(2, 16, 32, 4, {10, 10}, {3}, {1}, {1})},
      {"long_k_2304", conv_case_shape(1, 256, 128, 1, {8, 8}, {3}, {1}, {1})},
      {"bias_relu", conv_case_shape(2, 16, 24, 1, {9, 9}, {3}, {1}, {1}), E::bias_relu},
      {"bias_gelu_1x1", conv_case_shape(1, 32, 40, 1, {7, 7}, {1}), E::bias_gelu},
  };
}

// Shapes for the im2col TMA load (kernels/conv_igemm_im2col_tma.cuh: one group, channels a
// multiple of 32), chosen to stress its walk over the bounding box: stride 2 with padding and odd
// sizes, no padding, non-square inputs and kernels with asymmetric padding, 1x1 / 3x3 / 5x5 / 7x7
// kernels, 32 / 64 / 96 / 512 channels in and up to 256 out, dilation, images smaller than a tile
// (the 128-position walk wraps across rows and images; a 1x1 output wraps at every step), last
// partial tiles, K long enough to split, the largest traversal stride (8), a crop (a positive
// lower corner), 1-d (an NWC map) and 3-d (NDHWC). Every one runs on the other gathers too.
inline std::vector<ConvIgemmCase> conv_igemm_tma_cases() {
  using E = MatmulEpilogue;
  return {
      // 9 x 9 outputs per image, M = 243: two tiles, the last partial.
      {"tma_k3_stride2_pad1_odd", conv_case_shape(3, 32, 48, 1, {17, 17}, {3}, {2}, {1})},
      {"tma_k3_pad0_nonsquare", conv_case_shape(2, 64, 64, 1, {12, 10}, {3})},
      {"tma_k5x3_stride1x2_asymmetric",
       conv_case_shape(2, 32, 40, 1, {15, 11}, {5, 3}, {1, 2}, {2, 1}, {1, 0})},
      {"tma_k1x1_96ch_two_channel_tiles", conv_case_shape(4, 96, 130, 1, {7, 9}, {1})},
      // 256 channels, K of two tiles (no split): one product takes its 256-wide tile unforced.
      {"tma_k1x1_256ch_wide_tile", conv_case_shape(2, 64, 256, 1, {16, 16}, {1})},
      {"tma_k7_stride2_pad3", conv_case_shape(2, 32, 64, 1, {23, 23}, {7}, {2}, {3})},
      {"tma_k5_dilation2", conv_case_shape(2, 64, 32, 1, {13, 13}, {5}, {1}, {4}, {4}, {2})},
      // 35 positions per image: a tile's walk spans four images.
      {"tma_small_images_wrap", conv_case_shape(5, 32, 32, 1, {5, 7}, {3}, {1}, {1})},
      {"tma_output_1x1", conv_case_shape(3, 32, 16, 1, {3, 3}, {3})},
      // One tile of 25 positions, K = 4608: split K.
      {"tma_split_k_4608", conv_case_shape(1, 512, 64, 1, {5, 5}, {3}, {1}, {1})},
      {"tma_patchify_k8_stride8", conv_case_shape(2, 32, 64, 1, {32, 32}, {8}, {8})},
      {"tma_negative_padding_crops",
       conv_case_shape(2, 32, 16, 1, {12, 11}, {3, 2}, {1}, {-1, 1}, {-2, -1}, {1, 2})},
      {"tma_conv1d_k5_stride2", conv_case_shape(3, 64, 32, 1, {100}, {5}, {2}, {2})},
      {"tma_conv3d_k3", conv_case_shape(2, 32, 32, 1, {5, 6, 7}, {3}, {1, 2, 1}, {1})},
      {"tma_bias_relu", conv_case_shape(2, 32, 24, 1, {9, 9}, {3}, {1}, {1}), E::bias_relu},
  };
}

// Shapes for the TMA boxes of an NCDHW x (kernels/conv_igemm_box_tma.cuh: one group, stride 1,
// widths a multiple of 4, channels padding to 32 by at most a third, boxes at most an eighth past
// the output), chosen to stress the box tiling and the K tiles' coordinates: every box shape (128
// x 1 at a 126-wide output, 64 x 2, 32 x 4, 16 x 8, 8 x 16), boxes past the output's right and
// bottom edges, padding (asymmetric: a box starting left of x), dilation, a crop, 48 channels
// padded to 64, 96 (three K tiles a tap), more output channels than a tile, K long enough to
// split, batches, 1-d and 3-d (a box per depth).
inline std::vector<ConvIgemmCase> conv_igemm_box_cases() {
  using E = MatmulEpilogue;
  return {
      {"box_k3_128x1", conv_case_shape(2, 32, 64, 1, {128, 128}, {3})},
      {"box_k3_pad1_64x2", conv_case_shape(2, 64, 40, 1, {36, 60}, {3}, {1}, {1})},
      {"box_k3_pad1_32x4", conv_case_shape(3, 48, 64, 1, {28, 32}, {3}, {1}, {1})},
      {"box_k5x3_asymmetric", conv_case_shape(2, 32, 48, 1, {17, 16}, {5, 3}, {1}, {2, 1}, {1, 0})},
      {"box_k3_dilation2_16x8", conv_case_shape(2, 96, 32, 1, {16, 16}, {3}, {1}, {2}, {2}, {2})},
      {"box_k3_8x16", conv_case_shape(4, 32, 16, 1, {16, 8}, {3}, {1}, {1})},
      {"box_negative_padding_crops",
       conv_case_shape(2, 32, 16, 1, {13, 32}, {3, 2}, {1}, {-1, 1}, {-2, -1}, {1, 2})},
      {"box_k1x1_130ch", conv_case_shape(2, 64, 130, 1, {20, 32}, {1})},
      {"box_k3_300ch", conv_case_shape(1, 32, 300, 1, {16, 16}, {3}, {1}, {1})},
      {"box_split_k_4608", conv_case_shape(1, 512, 64, 1, {8, 16}, {3}, {1}, {1})},
      {"box_conv1d_k5", conv_case_shape(3, 64, 32, 1, {256}, {5}, {1}, {2})},
      {"box_conv3d_k3", conv_case_shape(2, 32, 32, 1, {3, 8, 16}, {3}, {1}, {1})},
      {"box_bias_relu", conv_case_shape(2, 32, 24, 1, {16, 16}, {3}, {1}, {1}), E::bias_relu},
  };
}

// The epilogue in double on one output: `bias` added to the sum and to its scale (the sum of
// |terms|) where the epilogue has one, then the activation.
inline void apply_double_epilogue(MatmulEpilogue epilogue, double bias, double& sum,
                                  double& scale) {
  if (epilogue_has_bias(epilogue)) {
    sum += bias;
    scale += std::fabs(bias);
  }
  if (epilogue == MatmulEpilogue::bias_relu || epilogue == MatmulEpilogue::relu)
    sum = std::max(sum, 0.0);
  if (epilogue == MatmulEpilogue::bias_gelu || epilogue == MatmulEpilogue::gelu)
    sum = gelu_tanh(sum);
}

// The convolution in double, with the epilogue, and per element the sum of |terms| (bias
// included) as the tolerance's scale.
inline std::vector<double> double_reference(const ConvIgemmShape& s, MatmulEpilogue epilogue,
                                            const std::vector<float>& x,
                                            const std::vector<float>& w,
                                            const std::vector<float>& bias,
                                            std::vector<double>* scale) {
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  const int64_t cin = s.in_channels / s.groups, cout = s.out_channels / s.groups;
  const int64_t in_plane = d.input[0] * d.input[1] * d.input[2];
  const int64_t out_plane = d.output[0] * d.output[1] * d.output[2];
  const int64_t volume = d.kernel[0] * d.kernel[1] * d.kernel[2];
  std::vector<double> y(conv_output_elements(s), 0.0);
  scale->assign(y.size(), 0.0);
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t co = 0; co < s.out_channels; ++co)
      for (int64_t o = 0; o < out_plane; ++o) {
        const int64_t out[3] = {o / (d.output[1] * d.output[2]), o / d.output[2] % d.output[1],
                                o % d.output[2]};
        const int64_t group = co / cout;
        double sum = 0.0, magnitude = 0.0;
        for (int64_t ci = 0; ci < cin; ++ci)
          for (int64_t tap = 0; tap < volume; ++tap) {
            const int64_t k[3] = {tap / (d.kernel[1] * d.kernel[2]),
                                  tap / d.kernel[2] % d.kernel[1], tap % d.kernel[2]};
            int64_t at = 0;
            bool inside = true;
            for (int i = 0; i < 3 && inside; ++i) {
              const int64_t in = out[i] * d.stride[i] - d.pad[i] + k[i] * d.dilation[i];
              inside = in >= 0 && in < d.input[i];
              at = at * d.input[i] + in;
            }
            if (!inside) continue;
            const double term =
                static_cast<double>(x[(n * s.in_channels + group * cin + ci) * in_plane + at]) *
                w[(co * cin + ci) * volume + tap];
            sum += term;
            magnitude += std::fabs(term);
          }
        apply_double_epilogue(epilogue, bias[co], sum, magnitude);
        const int64_t yi = (n * s.out_channels + co) * out_plane + o;
        y[yi] = sum;
        (*scale)[yi] = magnitude;
      }
  return y;
}

}  // namespace stitch::kernels::testing
