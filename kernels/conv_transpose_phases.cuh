// A transposed convolution as forward convolutions, one per output phase (host side; the index
// helpers also on the device).
//
// y = conv_transpose(x, w) adds x[i]·w[k] into y[o] for o = i·stride - pad + k·dilation, per
// spatial dimension. The outputs of one phase, o = phase + stride·q, take exactly the taps k with
// (phase + pad - k·dilation) ≡ 0 (mod stride), and such a tap reads input i = q + (phase + pad -
// k·dilation) / stride. Those taps are t = stride / gcd(stride, dilation) apart, and as k falls by
// t the input index rises by e = dilation / gcd(stride, dilation): a forward convolution over x
// with stride 1, dilation e, the phase's taps in reverse order, and the padding that lines its
// first window up (negative where the window starts inside x: a crop, which the implicit-GEMM
// convolution takes). Over all dimensions a phase is a product of per-dimension phases, its weight
// w' [out_channels][in_channels / groups][taps...] picked out of w [in_channels][out_channels /
// groups][kernel...], its outputs the strided subset of y. A phase without taps only receives the
// bias.
//
// So the implicit-GEMM convolution, which runs forward convolutions on the tensor cores, can run a
// transposed one: stride^spatial forward convolutions, none of whose products are zero (the
// zero-inserted formulation would multiply zeros in (stride^spatial - 1) of every stride^spatial
// positions). The pieces here are pure and CPU-tested (conv_transpose_phases_test.cu): the
// per-phase shapes and the weight and output index maps, checked against the direct definition.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "conv_igemm_common.cuh"

namespace stitch::kernels {

// PyTorch's ConvTranspose{1,2,3}d: x [batch][in_channels][input...], w [in_channels][out_channels /
// groups][kernel...], y [batch][out_channels][output...]; `pad` is PyTorch's padding (the outputs
// it crops at the start), and `output` the size y has, which holds any output_padding:
// output = (input - 1)·stride - 2·pad + dilation·(kernel - 1) + 1 + output_padding.
struct ConvTransposeShape {
  int spatial = 2;  // 1, 2 or 3
  int64_t batch = 1, in_channels = 0, out_channels = 0, groups = 1;
  int64_t input[3] = {1, 1, 1}, output[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, pad[3] = {0, 0, 0}, dilation[3] = {1, 1, 1};
};

// One dimension of a phase (unit dimensions in front of a 1-d or 2-d shape have one phase, 0).
struct ConvTransposeAxisPhase {
  int64_t phase = 0;    // its outputs: phase, phase + stride, ... (below the output size)
  int64_t outputs = 0;  // how many
  int64_t taps = 0;     // of the kernel's, in this phase; 0: no input reaches these outputs
  int64_t last_tap = 0, tap_step = 1;     // forward tap j is kernel index last_tap - j·tap_step
  int64_t dilation = 1;                   // the forward convolution's (e above)
  int64_t pad_before = 0, pad_after = 0;  // of the forward convolution over x (< 0: a crop)
};

// A whole phase: its dimensions (3-d view: depth, height, width) and the forward convolution of x's
// slice with the phase's weight. Without taps (`contributes` false) `forward` is unset.
struct ConvTransposePhase {
  ConvTransposeAxisPhase axis[3];
  bool contributes = false;
  ConvIgemmShape forward;
};

namespace detail {

// The shape in the 3-d view (unit dimensions in front), as conv_igemm_dims does for forward ones.
inline ConvTransposeShape conv_transpose_3d(const ConvTransposeShape& s) {
  ConvTransposeShape d = s;
  conv_3d(s.input, s.spatial, 1, d.input);
  conv_3d(s.output, s.spatial, 1, d.output);
  conv_3d(s.kernel, s.spatial, 1, d.kernel);
  conv_3d(s.stride, s.spatial, 1, d.stride);
  conv_3d(s.pad, s.spatial, 0, d.pad);
  conv_3d(s.dilation, s.spatial, 1, d.dilation);
  d.spatial = 3;
  return d;
}

// a mod b in [0, b) for b > 0, whatever a's sign.
inline int64_t floor_mod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return r < 0 ? r + b : r;
}

}  // namespace detail

// The phases of one dimension: input, output and kernel sizes, stride, pad, dilation (all valid:
// conv_transpose_shape_problem). Phases without outputs (an output smaller than the stride) are
// left out.
inline std::vector<ConvTransposeAxisPhase> conv_transpose_axis_phases(int64_t input, int64_t output,
                                                                      int64_t kernel,
                                                                      int64_t stride, int64_t pad,
                                                                      int64_t dilation) {
  std::vector<ConvTransposeAxisPhase> phases;
  const int64_t common = std::gcd(stride, dilation);
  const int64_t tap_step = stride / common, forward_dilation = dilation / common;
  for (int64_t phase = 0; phase < stride && phase < output; ++phase) {
    ConvTransposeAxisPhase a;
    a.phase = phase;
    a.outputs = (output - phase + stride - 1) / stride;
    a.tap_step = tap_step;
    a.dilation = forward_dilation;
    // The largest tap k < kernel with (phase + pad - k·dilation) ≡ 0 (mod stride).
    for (int64_t k = kernel - 1; k >= 0 && k >= kernel - tap_step; --k)
      if (detail::floor_mod(phase + pad - k * dilation, stride) == 0) {
        a.last_tap = k;
        a.taps = k / tap_step + 1;
        break;
      }
    if (a.taps > 0) {
      // Forward tap j reads input q + first + j·e, first being the last tap's offset: a padding of
      // -first before x (a crop where first > 0), and after it what makes the forward output size
      // (input + pads - e·(taps - 1) - 1) + 1 equal `outputs`.
      const int64_t first = (phase + pad - a.last_tap * dilation) / stride;  // exact
      a.pad_before = -first;
      a.pad_after = a.outputs + forward_dilation * (a.taps - 1) - input - a.pad_before;
    }
    phases.push_back(a);
  }
  return phases;
}

// "" when the shape is one conv_transpose_phases takes, else what is wrong with it.
inline std::string conv_transpose_shape_problem(const ConvTransposeShape& s) {
  if (const char* bad = detail::conv_counts_problem(s); *bad != '\0') return bad;
  for (int i = 0; i < s.spatial; ++i) {
    if (s.input[i] <= 0 || s.output[i] <= 0 || s.kernel[i] <= 0 || s.stride[i] <= 0 ||
        s.dilation[i] <= 0 || s.pad[i] < 0)
      return "sizes, strides and dilations must be positive, padding non-negative";
    const int64_t full =
        (s.input[i] - 1) * s.stride[i] - 2 * s.pad[i] + s.dilation[i] * (s.kernel[i] - 1) + 1;
    // PyTorch allows output_padding below max(stride, dilation).
    if (s.output[i] < full || s.output[i] - full >= std::max(s.stride[i], s.dilation[i]))
      return "output size does not follow from input, kernel, stride, padding and dilation";
  }
  return "";
}

// Every phase of `s` (conv_transpose_shape_problem(s) empty), in (depth, height, width) phase
// order.
inline std::vector<ConvTransposePhase> conv_transpose_phases(const ConvTransposeShape& s) {
  const ConvTransposeShape d = detail::conv_transpose_3d(s);
  std::vector<ConvTransposeAxisPhase> axes[3];
  for (int i = 0; i < 3; ++i)
    axes[i] = conv_transpose_axis_phases(d.input[i], d.output[i], d.kernel[i], d.stride[i],
                                         d.pad[i], d.dilation[i]);
  std::vector<ConvTransposePhase> phases;
  for (const ConvTransposeAxisPhase& a0 : axes[0])
    for (const ConvTransposeAxisPhase& a1 : axes[1])
      for (const ConvTransposeAxisPhase& a2 : axes[2]) {
        ConvTransposePhase phase;
        phase.axis[0] = a0, phase.axis[1] = a1, phase.axis[2] = a2;
        phase.contributes = a0.taps > 0 && a1.taps > 0 && a2.taps > 0;
        if (phase.contributes) {
          ConvIgemmShape& f = phase.forward;
          f.spatial = s.spatial;
          f.batch = s.batch, f.in_channels = s.in_channels, f.out_channels = s.out_channels;
          f.groups = s.groups;
          for (int i = 0; i < s.spatial; ++i) {
            const ConvTransposeAxisPhase& a = phase.axis[i + 3 - s.spatial];
            f.input[i] = d.input[i + 3 - s.spatial];
            f.output[i] = a.outputs, f.kernel[i] = a.taps;
            f.stride[i] = 1, f.dilation[i] = a.dilation;
            f.pad_before[i] = a.pad_before, f.pad_after[i] = a.pad_after;
          }
        }
        phases.push_back(phase);
      }
  return phases;
}

// Where the phase's forward weight w'[co][ci][j0][j1][j2] (co of out_channels, ci of in_channels /
// groups, j the phase's taps in the 3-d view) comes from in w [in_channels][out_channels /
// groups][kernel...] of `s` in the 3-d view (conv_transpose_3d).
__host__ __device__ inline int64_t conv_transpose_weight_index(const ConvTransposeShape& s3,
                                                               const ConvTransposePhase& phase,
                                                               int64_t co, int64_t ci,
                                                               const int64_t (&j)[3]) {
  const int64_t out_per_group = s3.out_channels / s3.groups;
  const int64_t in_per_group = s3.in_channels / s3.groups;
  const int64_t group = co / out_per_group;
  int64_t at = (group * in_per_group + ci) * out_per_group + (co - group * out_per_group);
  for (int i = 0; i < 3; ++i)
    at = at * s3.kernel[i] + (phase.axis[i].last_tap - j[i] * phase.axis[i].tap_step);
  return at;
}

// The element of y ([batch][out_channels][output...], 3-d view) that element (image, channel, q)
// of the phase's forward output lands on.
__host__ __device__ inline int64_t conv_transpose_output_index(const ConvTransposeShape& s3,
                                                               const ConvTransposePhase& phase,
                                                               int64_t image, int64_t channel,
                                                               const int64_t (&q)[3]) {
  int64_t at = image * s3.out_channels + channel;
  for (int i = 0; i < 3; ++i)
    at = at * s3.output[i] + phase.axis[i].phase + q[i] * s3.stride[i];
  return at;
}

// Where the phase's forward convolution writes in y: its outputs q go to phase + stride·q of y
// ([batch][out_channels][output...] of `s`), for ConvIgemmTf32x3::set_output_map.
inline ConvIgemmOutputMap conv_transpose_output_map(const ConvTransposeShape& s,
                                                    const ConvTransposePhase& phase) {
  const ConvTransposeShape s3 = detail::conv_transpose_3d(s);
  const int64_t pitch[3] = {s3.output[1] * s3.output[2], s3.output[2], 1};
  ConvIgemmOutputMap map;
  map.channel_floats = s3.output[0] * pitch[0];
  map.image_floats = s3.out_channels * map.channel_floats;
  for (int i = 0; i < 3; ++i) {
    map.origin += phase.axis[i].phase * pitch[i];
    map.step[i] = s3.stride[i] * pitch[i];
  }
  return map;
}

}  // namespace stitch::kernels
