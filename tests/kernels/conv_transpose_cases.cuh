// The transposed convolutions kernels/conv_transpose.cuh is tested on, and their definition in
// double, shared by the CPU tests (the phase decomposition, conv_transpose_phases_test.cu;
// ConvTransposeDirect emulated, conv_direct_plan_test.cu; label unit) and the GPU tests of
// ConvTransposeIgemmTf32x3 (conv_igemm_tf32x3_test.cu), ConvTransposeDirect and
// ConvTransposeDirectTf32 (conv_direct_test.cu; label gpu).
#pragma once

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "conv_igemm_cases.cuh"
#include "kernels/conv_transpose_phases.cuh"
#include "kernels/matmul.cuh"

namespace stitch::kernels::testing {

struct ConvTransposeCase {
  std::string name;
  ConvTransposeShape shape;
  MatmulEpilogue epilogue = MatmulEpilogue::none;
};

inline void PrintTo(const ConvTransposeCase& c, std::ostream* os) {
  *os << c.name;
}

// The shape with its output sizes computed as PyTorch does (one value per list: every dim).
inline ConvTransposeShape conv_transpose_case_shape(int64_t batch, int64_t in_channels,
                                                    int64_t out_channels, int64_t groups,
                                                    const std::vector<int64_t>& input,
                                                    int64_t kernel, int64_t stride, int64_t pad,
                                                    int64_t dilation = 1,
                                                    int64_t output_padding = 0) {
  ConvTransposeShape s;
  s.spatial = static_cast<int>(input.size());
  s.batch = batch, s.in_channels = in_channels, s.out_channels = out_channels, s.groups = groups;
  for (size_t i = 0; i < input.size(); ++i) {
    s.input[i] = input[i], s.kernel[i] = kernel, s.stride[i] = stride, s.pad[i] = pad;
    s.dilation[i] = dilation;
    s.output[i] = (input[i] - 1) * stride - 2 * pad + dilation * (kernel - 1) + 1 + output_padding;
  }
  return s;
}

// KernelBench's transposed convolutions in small: 2-d k3 s2 / k4 s2 p1, 3-d k3 s2 p1 with output
// padding, groups, a dilated 1-d one, stride 1, a stride past the kernel (outputs no tap reaches:
// the bias fill), and the fused epilogues.
inline std::vector<ConvTransposeCase> conv_transpose_cases() {
  using E = MatmulEpilogue;
  return {
      {"k3_s2_2d", conv_transpose_case_shape(2, 16, 24, 1, {9, 10}, 3, 2, 0)},
      {"k4_s2_p1_2d_bias", conv_transpose_case_shape(2, 32, 16, 1, {8, 8}, 4, 2, 1), E::bias},
      {"k3_s2_p1_op1_3d", conv_transpose_case_shape(1, 8, 12, 1, {4, 5, 6}, 3, 2, 1, 1, 1)},
      {"groups2_k4_s2_p1", conv_transpose_case_shape(2, 16, 20, 2, {7, 7}, 4, 2, 1)},
      {"dilated_1d", conv_transpose_case_shape(3, 12, 8, 1, {20}, 3, 2, 2, 3, 1)},
      {"stride1_k3_p1", conv_transpose_case_shape(2, 8, 8, 1, {12, 12}, 3, 1, 1), E::bias_relu},
      {"stride3_k2_bias_fill", conv_transpose_case_shape(2, 8, 12, 1, {5, 6}, 2, 3, 0, 1, 2),
       E::bias_gelu},
  };
}

// y = conv_transpose(x, w) by the definition, y[o] += x[i]·w[k] for o = i·stride - pad +
// k·dilation, with per element the sum of |terms| in `scale` (when given).
inline std::vector<double> conv_transpose_direct(const ConvTransposeShape& s,
                                                 const std::vector<double>& x,
                                                 const std::vector<double>& w,
                                                 std::vector<double>* scale = nullptr) {
  const ConvTransposeShape d = detail::conv_transpose_3d(s);
  const int64_t in_g = d.in_channels / d.groups, out_g = d.out_channels / d.groups;
  const int64_t in_plane = d.input[0] * d.input[1] * d.input[2];
  const int64_t out_plane = d.output[0] * d.output[1] * d.output[2];
  const int64_t volume = d.kernel[0] * d.kernel[1] * d.kernel[2];
  std::vector<double> y(static_cast<size_t>(d.batch * d.out_channels * out_plane), 0.0);
  if (scale != nullptr) scale->assign(y.size(), 0.0);
  for (int64_t n = 0; n < d.batch; ++n)
    for (int64_t ci = 0; ci < d.in_channels; ++ci)
      for (int64_t co = 0; co < out_g; ++co)
        for (int64_t i = 0; i < in_plane; ++i)
          for (int64_t k = 0; k < volume; ++k) {
            const int64_t in[3] = {i / (d.input[1] * d.input[2]), i / d.input[2] % d.input[1],
                                   i % d.input[2]};
            const int64_t tap[3] = {k / (d.kernel[1] * d.kernel[2]), k / d.kernel[2] % d.kernel[1],
                                    k % d.kernel[2]};
            int64_t o = 0;
            bool inside = true;
            for (int a = 0; a < 3; ++a) {
              const int64_t at = in[a] * d.stride[a] - d.pad[a] + tap[a] * d.dilation[a];
              inside = inside && at >= 0 && at < d.output[a];
              o = o * d.output[a] + at;
            }
            if (!inside) continue;
            const auto yi =
                static_cast<size_t>((n * d.out_channels + ci / in_g * out_g + co) * out_plane + o);
            const double term = x[static_cast<size_t>((n * d.in_channels + ci) * in_plane + i)] *
                                w[static_cast<size_t>((ci * out_g + co) * volume + k)];
            y[yi] += term;
            if (scale != nullptr) (*scale)[yi] += std::fabs(term);
          }
  return y;
}

// The case by the definition in double (conv_transpose_direct) with its epilogue
// (apply_double_epilogue), each output's sum of |terms| in `scale`.
inline std::vector<double> conv_transpose_double_reference(const ConvTransposeCase& c,
                                                           const std::vector<float>& x,
                                                           const std::vector<float>& w,
                                                           const std::vector<float>& bias,
                                                           std::vector<double>* scale) {
  const ConvTransposeShape d = detail::conv_transpose_3d(c.shape);
  const int64_t out_plane = d.output[0] * d.output[1] * d.output[2];
  std::vector<double> y = conv_transpose_direct(c.shape, std::vector<double>(x.begin(), x.end()),
                                                std::vector<double>(w.begin(), w.end()), scale);
  for (size_t i = 0; i < y.size(); ++i)
    apply_double_epilogue(c.epilogue, bias[static_cast<int64_t>(i) / out_plane % d.out_channels],
                          y[i], (*scale)[i]);
  return y;
}

}  // namespace stitch::kernels::testing
