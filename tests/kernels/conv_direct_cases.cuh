// What the direct convolution (kernels/conv_direct.cuh) is tested against, shared by its CPU
// emulation (conv_direct_plan_test.cu, label unit) and its GPU test (conv_direct_test.cu, label
// gpu): the exact FP32 sum it computes, shapes of few input channels besides
// conv_igemm_cases.cuh's, and whole launches emulated on the CPU — one direct convolution, and a
// transposed one as its phases (ConvTransposeDirect, kernels/conv_transpose.cuh).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "conv_igemm_cases.cuh"
#include "kernels/conv_transpose.cuh"

namespace stitch::kernels::testing {

// y[image][channel][od][oh][ow] (dense): per output the fmaf chain over k in PyTorch's weight
// order, taps outside x read as zeros, then bias and activation.
inline std::vector<float> k_order_reference(const ConvIgemmShape& s, MatmulEpilogue epilogue,
                                            const std::vector<float>& x,
                                            const std::vector<float>& w,
                                            const std::vector<float>& bias) {
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  const int64_t cin = s.in_channels / s.groups, cout = s.out_channels / s.groups;
  const int64_t in_plane = d.input[0] * d.input[1] * d.input[2];
  const int64_t products = cin * d.kernel[0] * d.kernel[1] * d.kernel[2];  // K
  std::vector<float> y(conv_output_elements(s));
  int64_t at = 0;
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t co = 0; co < s.out_channels; ++co)
      for (int64_t od = 0; od < d.output[0]; ++od)
        for (int64_t oh = 0; oh < d.output[1]; ++oh)
          for (int64_t ow = 0; ow < d.output[2]; ++ow) {
            const int64_t group = co / cout;
            float acc = 0.0f;
            int64_t k = 0;
            for (int64_t ci = 0; ci < cin; ++ci)
              for (int64_t kd = 0; kd < d.kernel[0]; ++kd)
                for (int64_t kh = 0; kh < d.kernel[1]; ++kh)
                  for (int64_t kw = 0; kw < d.kernel[2]; ++kw, ++k) {
                    const int64_t id = od * d.stride[0] - d.pad[0] + kd * d.dilation[0];
                    const int64_t ih = oh * d.stride[1] - d.pad[1] + kh * d.dilation[1];
                    const int64_t iw = ow * d.stride[2] - d.pad[2] + kw * d.dilation[2];
                    const bool inside = id >= 0 && id < d.input[0] && ih >= 0 && ih < d.input[1] &&
                                        iw >= 0 && iw < d.input[2];
                    const float xv = inside ? x[(n * s.in_channels + group * cin + ci) * in_plane +
                                                (id * d.input[1] + ih) * d.input[2] + iw]
                                            : 0.0f;
                    acc = std::fmaf(xv, w[co * products + k], acc);
                  }
            y[at++] = detail::gemm_activation(acc + (epilogue_has_bias(epilogue) ? bias[co] : 0.0f),
                                              epilogue);
          }
  return y;
}

// KernelBench-like convolutions of few input channels (scaled down to emulate quickly), one whose
// output is wider than a tile of 128 columns, and a 1-d one whose warps take column groups.
inline std::vector<ConvIgemmCase> few_channel_cases() {
  return {
      {"cin3_conv3d_k3", conv_case_shape(2, 3, 16, 1, {5, 10, 12}, {3})},
      {"cin8_k3_64_out", conv_case_shape(2, 8, 64, 1, {12, 20}, {3})},
      {"cin8_conv3d_k3_32_out", conv_case_shape(1, 8, 32, 1, {4, 6, 40}, {3})},
      {"cin3_conv3d_k4_bias_relu", conv_case_shape(1, 3, 16, 1, {6, 7, 9}, {4}),
       MatmulEpilogue::bias_relu},
      {"wide_row_stride2", conv_case_shape(1, 3, 24, 1, {6, 300}, {3}, {2}, {1})},
      {"cin1_k5", conv_case_shape(3, 1, 6, 1, {16, 70}, {5})},
      {"conv1d_column_groups", conv_case_shape(2, 4, 16, 1, {500}, {5}, {1}, {2})},
  };
}

// Shapes for the channel reduction (ChannelReduction: one group, every output channel in one
// block): level 2's 16 -> 64 in small, output channels past the last full slice, 3-d, 1-d.
inline std::vector<ConvIgemmCase> channel_reduction_cases() {
  return {
      {"cin16_k3_64_out", conv_case_shape(2, 16, 64, 1, {12, 40}, {3})},
      {"cin8_k3_20_out_pad1", conv_case_shape(2, 8, 20, 1, {9, 70}, {3}, {1}, {1}),
       MatmulEpilogue::bias},
      {"cin3_conv3d_k3_16_out", conv_case_shape(1, 3, 16, 1, {5, 10, 12}, {3})},
      {"conv1d_k5_24_out", conv_case_shape(2, 4, 24, 1, {300}, {5})},
  };
}

// An output transform per (image, channel) plane and a channel reduction's finish per image whose
// arithmetic is exact: the same bits on the host and the device.
struct PlaneSkew {
  __host__ __device__ float operator()(int64_t plane, float v) const {
    return v - 0.125f * static_cast<float>(plane % 5);
  }
};
struct ImageHalf {
  __host__ __device__ float operator()(int64_t image, float v) const {
    return 0.5f * v + static_cast<float>(image);
  }
};

// `values` ([batch, channels, positions...]) reduced over the channels at each position as the
// FP32 form of the direct kernel combines them — within each slice of 8 channels in order, then
// the slices' partials in order — and `finish`ed per image: [batch, positions...].
template <class Reduction>
inline std::vector<float> reduce_channels_in_slices(const std::vector<float>& values,
                                                    int64_t batch, int64_t channels,
                                                    const Reduction& reduction) {
  const int64_t positions = static_cast<int64_t>(values.size()) / (batch * channels);
  constexpr int64_t kSlice = detail::kDirectConvChannelsPerThread;
  std::vector<float> out(batch * positions);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t i = 0; i < positions; ++i) {
      float total = 0.0f;
      for (int64_t c0 = 0; c0 < channels; c0 += kSlice) {
        float partial = Reduction::identity();
        for (int64_t c = c0; c < std::min(c0 + kSlice, channels); ++c)
          partial = Reduction::combine(partial, values[(n * channels + c) * positions + i]);
        total = c0 == 0 ? partial : Reduction::combine(total, partial);
      }
      out[n * positions + i] = reduction.finish(n, total);
    }
  return out;
}

// One launch of the direct kernel on the CPU into `y` (which the caller sized and filled): per
// block, the weight copy and row step 0's patch copy, then per row step (the kernel's
// __syncthreads between) every thread's copy of the next step's patch where there are two
// buffers, every thread's compute, with a channel reduction (p.reduce_channels) every thread's
// share of it, and with one buffer the next step's copy; shared memory poisoned with NaN first
// and each patch buffer before its copy, so a word read before it is copied (or after another
// step's copy overwrote it) turns its outputs NaN.
template <class Transform = detail::PlaneIdentity,
          class Reduction = detail::NoChannelReduction>
inline void emulate_direct_conv(const detail::DirectConvParams& p, const std::vector<float>& x,
                                const std::vector<float>& w, const std::vector<float>& bias,
                                std::vector<float>& y, const Transform& transform = {},
                                const Reduction& reduction = {}) {
  std::vector<float> shared(p.shared_bytes() / sizeof(float));
  const int threads = detail::kDirectConvThreads;
  auto compute = [&](const detail::DirectConvBlock& b, int step, int tid) {
    switch (p.cols_per_lane) {
      case 1:
        return detail::direct_conv_compute<1, Transform, Reduction>(
            p, b, step, shared.data(), bias.data(), y.data(), tid, transform);
      case 2:
        return detail::direct_conv_compute<2, Transform, Reduction>(
            p, b, step, shared.data(), bias.data(), y.data(), tid, transform);
      default:
        return detail::direct_conv_compute<4, Transform, Reduction>(
            p, b, step, shared.data(), bias.data(), y.data(), tid, transform);
    }
  };
  auto copy_patch = [&](const detail::DirectConvBlock& b, int step) {
    std::fill_n(shared.begin() + p.patch_start(step), p.patch_floats,
                std::numeric_limits<float>::quiet_NaN());
    for (int tid = 0; tid < threads; ++tid)
      detail::direct_conv_load_patch(p, b, step, x.data(), shared.data(), tid, threads);
  };
  const bool ahead = p.patch_buffers > 1;
  for (int64_t block = 0; block < p.blocks; ++block) {
    std::fill(shared.begin(), shared.end(), std::numeric_limits<float>::quiet_NaN());
    const detail::DirectConvBlock b = detail::direct_conv_block(p, block);
    auto has_step = [&](int step) {
      return step < p.row_steps && b.oh0 + step * p.warp_rows < p.out[1];
    };
    for (int tid = 0; tid < threads; ++tid)
      detail::direct_conv_load_weights(p, b, w.data(), shared.data(), tid, threads);
    copy_patch(b, 0);
    for (int step = 0; has_step(step); ++step) {
      if (ahead && has_step(step + 1)) copy_patch(b, step + 1);
      for (int tid = 0; tid < threads; ++tid)
        compute(b, step, tid);
      if constexpr (detail::kReducesChannels<Reduction>)
        for (int tid = 0; tid < threads; ++tid)
          detail::direct_conv_finish_reduction(p, b, step, shared.data(), y.data(), tid, threads,
                                               reduction);
      if (!ahead && has_step(step + 1)) copy_patch(b, step + 1);
    }
  }
}

// ConvTransposeDirect on the CPU: per phase of `s` (conv_transpose_phases), its weight gathered
// and its forward convolution emulated through its output map, or, where no tap reaches, the
// fill with act(bias) — what the class launches, element for element.
inline std::vector<float> emulate_conv_transpose_direct(const ConvTransposeShape& s,
                                                        MatmulEpilogue epilogue,
                                                        const std::vector<float>& x,
                                                        const std::vector<float>& w,
                                                        const std::vector<float>& bias) {
  const ConvTransposeShape s3 = detail::conv_transpose_3d(s);
  int64_t y_count = s3.batch * s3.out_channels;
  for (int i = 0; i < 3; ++i)
    y_count *= s3.output[i];
  std::vector<float> y(y_count, std::numeric_limits<float>::quiet_NaN());
  for (const ConvTransposePhase& phase : conv_transpose_phases(s)) {
    const ConvIgemmOutputMap map = conv_transpose_output_map(s, phase);
    if (!phase.contributes) {
      const int64_t count = s3.batch * s3.out_channels * phase.axis[0].outputs *
                            phase.axis[1].outputs * phase.axis[2].outputs;
      for (int64_t i = 0; i < count; ++i)
        detail::conv_transpose_fill(y.data(), bias.data(), epilogue, map, s3.out_channels, phase,
                                    i);
      continue;
    }
    std::vector<float> phase_w(s3.out_channels * (s3.in_channels / s3.groups) * phase.axis[0].taps *
                               phase.axis[1].taps * phase.axis[2].taps);
    for (size_t i = 0; i < phase_w.size(); ++i)
      phase_w[i] =
          detail::conv_transpose_phase_weight(w.data(), s3, phase, static_cast<int64_t>(i));
    detail::DirectConvParams p;
    if (!detail::plan_direct_conv(phase.forward, 4, p).empty()) return {};
    p.epilogue = epilogue;
    p.y_image = map.image_floats, p.y_channel = map.channel_floats, p.y_origin = map.origin;
    for (int i = 0; i < 3; ++i)
      p.y_step[i] = map.step[i];
    emulate_direct_conv(p, x, phase_w, bias, y);
  }
  return y;
}

}  // namespace stitch::kernels::testing
