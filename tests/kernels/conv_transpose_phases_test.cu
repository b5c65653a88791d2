// kernels/conv_transpose_phases.cuh without a GPU (label unit): a transposed convolution computed
// as its phases' forward convolutions (each run here by a direct CPU loop over exactly the shape,
// weight map and output map the phase gives) must equal the transposed convolution by its
// definition, every output element written by exactly one phase, where the implicit GEMM's output
// map puts it; every phase's forward shape must be one the implicit-GEMM convolution accepts. Over
// every 1-d configuration of small sizes, and 2-d / 3-d shapes with groups like KernelBench's.
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "conv_transpose_cases.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"
#include "kernels/conv_transpose_phases.cuh"

namespace stitch::kernels {
namespace {

int64_t elements(const int64_t (&sizes)[3]) {
  return sizes[0] * sizes[1] * sizes[2];
}

std::vector<double> pattern(int64_t n, int64_t seed) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<double>((i * 37 + seed * 11) % 23) - 11.0;
  return v;
}

// y through the phases, each a forward convolution run directly on its own shape; `writes` counts
// the phase writes per element of y.
std::vector<double> by_phases(const ConvTransposeShape& s, const std::vector<double>& x,
                              const std::vector<double>& w, std::vector<int>& writes) {
  const ConvTransposeShape s3 = detail::conv_transpose_3d(s);
  const int64_t in_g = s3.in_channels / s3.groups, out_g = s3.out_channels / s3.groups;
  std::vector<double> y(static_cast<size_t>(s3.batch * s3.out_channels * elements(s3.output)));
  writes.assign(y.size(), 0);
  for (const ConvTransposePhase& phase : conv_transpose_phases(s)) {
    const ConvTransposeAxisPhase(&a)[3] = phase.axis;
    if (phase.contributes) {
      const std::string problem = conv_igemm_shape_problem(phase.forward);
      EXPECT_EQ(problem, "") << "phase " << a[0].phase << "," << a[1].phase << "," << a[2].phase;
      if (!problem.empty()) continue;
    }
    for (int64_t n = 0; n < s3.batch; ++n)
      for (int64_t co = 0; co < s3.out_channels; ++co)
        for (int64_t q0 = 0; q0 < a[0].outputs; ++q0)
          for (int64_t q1 = 0; q1 < a[1].outputs; ++q1)
            for (int64_t q2 = 0; q2 < a[2].outputs; ++q2) {
              const int64_t q[3] = {q0, q1, q2};
              double sum = 0.0;
              for (int64_t ci = 0; phase.contributes && ci < in_g; ++ci)
                for (int64_t j0 = 0; j0 < a[0].taps; ++j0)
                  for (int64_t j1 = 0; j1 < a[1].taps; ++j1)
                    for (int64_t j2 = 0; j2 < a[2].taps; ++j2) {
                      const int64_t j[3] = {j0, j1, j2};
                      int64_t xi = n * s3.in_channels + co / out_g * in_g + ci;
                      bool inside = true;
                      for (int d = 0; d < 3; ++d) {
                        const int64_t at = q[d] - a[d].pad_before + j[d] * a[d].dilation;
                        inside = inside && at >= 0 && at < s3.input[d];
                        xi = xi * s3.input[d] + at;
                      }
                      if (!inside) continue;
                      sum +=
                          x[static_cast<size_t>(xi)] *
                          w[static_cast<size_t>(conv_transpose_weight_index(s3, phase, co, ci, j))];
                    }
              const auto yi = static_cast<size_t>(conv_transpose_output_index(s3, phase, n, co, q));
              if (phase.contributes) {  // the implicit GEMM's own output map agrees
                detail::ConvIgemmParams p = detail::conv_igemm_params(
                    nullptr, nullptr, nullptr, nullptr, phase.forward, MatmulEpilogue::none);
                detail::conv_igemm_output_map(p, conv_transpose_output_map(s, phase));
                const int64_t m =
                    (n * a[0].outputs + q0) * a[1].outputs * a[2].outputs + q1 * a[2].outputs + q2;
                EXPECT_EQ(
                    detail::conv_output_offset(p, static_cast<int>(co / out_g), static_cast<int>(m),
                                               static_cast<int>(co % out_g)),
                    static_cast<int64_t>(yi));
              }
              y[yi] = sum;
              ++writes[yi];
            }
  }
  return y;
}

// Checks `s` and returns how many of its phases contribute.
int check(const ConvTransposeShape& s) {
  EXPECT_EQ(conv_transpose_shape_problem(s), "");
  const ConvTransposeShape s3 = detail::conv_transpose_3d(s);
  const auto x = pattern(s3.batch * s3.in_channels * elements(s3.input), 1);
  const auto w = pattern(s3.in_channels * (s3.out_channels / s3.groups) * elements(s3.kernel), 2);
  std::vector<int> writes;
  const auto got = by_phases(s, x, w, writes);
  const auto want = testing::conv_transpose_direct(s, x, w);
  int bad = 0;
  for (size_t i = 0; i < want.size() && bad < 3; ++i) {
    if (writes[i] != 1 || got[i] != want[i]) {  // integers: exact
      ++bad;
      ADD_FAILURE() << "element " << i << ": " << got[i] << " vs " << want[i] << ", written "
                    << writes[i] << " times";
    }
  }
  int contributing = 0;
  for (const ConvTransposePhase& phase : conv_transpose_phases(s))
    contributing += phase.contributes;
  return contributing;
}

ConvTransposeShape shape_1d(int64_t input, int64_t kernel, int64_t stride, int64_t pad,
                            int64_t dilation, int64_t output_padding) {
  ConvTransposeShape s;
  s.spatial = 1, s.batch = 2, s.in_channels = 2, s.out_channels = 3;
  s.input[0] = input, s.kernel[0] = kernel, s.stride[0] = stride, s.pad[0] = pad;
  s.dilation[0] = dilation;
  s.output[0] = (input - 1) * stride - 2 * pad + dilation * (kernel - 1) + 1 + output_padding;
  return s;
}

TEST(ConvTransposePhases, EverySmall1dConfigurationMatchesTheDefinition) {
  int shapes = 0;
  for (int64_t stride = 1; stride <= 4; ++stride)
    for (int64_t dilation = 1; dilation <= 3; ++dilation)
      for (int64_t kernel = 1; kernel <= 5; ++kernel)
        for (int64_t input = 1; input <= 4; ++input)
          for (int64_t pad = 0; pad <= dilation * (kernel - 1); ++pad)
            for (int64_t op = 0; op < std::max(stride, dilation); ++op) {
              const ConvTransposeShape s = shape_1d(input, kernel, stride, pad, dilation, op);
              if (s.output[0] < 1) continue;
              SCOPED_TRACE("input " + std::to_string(input) + " kernel " + std::to_string(kernel) +
                           " stride " + std::to_string(stride) + " pad " + std::to_string(pad) +
                           " dilation " + std::to_string(dilation) + " output_padding " +
                           std::to_string(op));
              check(s);
              ++shapes;
              if (HasFailure()) return;
            }
  EXPECT_GT(shapes, 1000);
}

TEST(ConvTransposePhases, PhasesOfAStride2Kernel3Axis) {
  // KernelBench's ConvTranspose3d(k=3, s=2, p=1, output_padding=1) per axis: even outputs take
  // the middle tap alone, odd ones the outer two (reversed: tap 2 first, reading inputs q and q+1).
  const auto phases = conv_transpose_axis_phases(4, 8, 3, 2, 1, 1);
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_EQ(phases[0].taps, 1);
  EXPECT_EQ(phases[0].last_tap, 1);
  EXPECT_EQ(phases[0].outputs, 4);
  EXPECT_EQ(phases[1].taps, 2);
  EXPECT_EQ(phases[1].last_tap, 2);
  EXPECT_EQ(phases[1].tap_step, 2);
  EXPECT_EQ(phases[1].dilation, 1);
  EXPECT_EQ(phases[1].pad_before, 0);
  EXPECT_EQ(phases[1].pad_after, 1);  // the last odd output's second tap falls past x
}

TEST(ConvTransposePhases, GroupedAndMultiDimensionalShapesMatchTheDefinition) {
  ConvTransposeShape s2;  // ConvTranspose2d(4 -> 6, k=4, s=2, p=1, groups=2)
  s2.spatial = 2, s2.batch = 2, s2.in_channels = 4, s2.out_channels = 6, s2.groups = 2;
  for (int i = 0; i < 2; ++i)
    s2.input[i] = 5, s2.kernel[i] = 4, s2.stride[i] = 2, s2.pad[i] = 1, s2.output[i] = 10;
  EXPECT_EQ(check(s2), 4);
  ConvTransposeShape s3;  // ConvTranspose3d(3 -> 4, k=3, s=2, p=1, output_padding=1)
  s3.spatial = 3, s3.batch = 1, s3.in_channels = 3, s3.out_channels = 4;
  for (int i = 0; i < 3; ++i)
    s3.input[i] = 3, s3.kernel[i] = 3, s3.stride[i] = 2, s3.pad[i] = 1, s3.output[i] = 6;
  EXPECT_EQ(check(s3), 8);
  ConvTransposeShape mixed;  // different strides, dilations and kernels per axis
  mixed.spatial = 2, mixed.batch = 1, mixed.in_channels = 2, mixed.out_channels = 2;
  mixed.input[0] = 4, mixed.kernel[0] = 3, mixed.stride[0] = 3, mixed.pad[0] = 2;
  mixed.dilation[0] = 2, mixed.output[0] = (4 - 1) * 3 - 4 + 2 * 2 + 1;
  mixed.input[1] = 3, mixed.kernel[1] = 2, mixed.stride[1] = 1, mixed.output[1] = 4;
  check(mixed);
}

TEST(ConvTransposePhases, TheGpuTestsShapesMatchTheDefinition) {
  for (const testing::ConvTransposeCase& c : testing::conv_transpose_cases()) {
    SCOPED_TRACE(c.name);
    check(c.shape);
  }
}

TEST(ConvTransposePhases, AStrideBeyondTheKernelLeavesPhasesWithoutTaps) {
  // k=2, s=3: one output in three receives no tap, only the bias.
  const auto phases = conv_transpose_axis_phases(3, 7, 2, 3, 0, 1);
  ASSERT_EQ(phases.size(), 3u);
  EXPECT_GT(phases[0].taps, 0);
  EXPECT_GT(phases[1].taps, 0);
  EXPECT_EQ(phases[2].taps, 0);
  check(shape_1d(3, 2, 3, 0, 1, 1));
}

TEST(ConvTransposePhases, ShapeProblems) {
  ConvTransposeShape s = shape_1d(4, 3, 2, 1, 1, 0);
  EXPECT_EQ(conv_transpose_shape_problem(s), "");
  ConvTransposeShape wrong = s;
  wrong.output[0] += 2;  // output_padding 2 is not below the stride
  EXPECT_NE(conv_transpose_shape_problem(wrong), "");
  wrong = s;
  wrong.groups = 4;
  EXPECT_NE(conv_transpose_shape_problem(wrong), "");
  wrong = s;
  wrong.spatial = 4;
  EXPECT_NE(conv_transpose_shape_problem(wrong), "");
}

}  // namespace
}  // namespace stitch::kernels
