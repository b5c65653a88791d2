// kernels/attention.cuh and its tensor-core variants (attention_mma.cuh) on the GPU against a
// double-precision CPU attention: softmax and ReLU (no normalisation) variants, causal, a boolean
// keep mask and an additive bias through the score functor, head dims 32 to 128 (80: a tile wider
// than the dims; 96 with value dim 64), ragged sequence lengths, queries != keys, strided
// ([batch, seq, heads, dim]) operands, outputs stored through strides as [seq, batch, heads·dim] or
// [batch, seq, heads·dim] rows (what an out-projection reads) — every case in every AttentionMath. Bounds per math
// (relative error norm, then allclose atol = rtol):
//   fp32_fma, tf32x3  the fp32 track's (docs/verify-protocol.md): norm < 5e-5, allclose 1e-4.
//   tf32              the tf32 track's allclose 1e-2 and norm < 2e-3: each operand (Q, K, P, V)
//                     rounded to a 10-bit mantissa (relative 2^-11 ~ 4.9e-4 at most, ~2.8e-4 RMS),
//                     the errors of a score's products and of an output's terms adding up as a
//                     random walk relative to the result: ~5e-4 expected, 4x headroom.
//   bf16              the bf16 track's allclose 1e-2 and norm < 1e-2: an 8-bit mantissa (2^-9 ~
//                     2e-3 at most, ~1.1e-3 RMS per rounding): ~2e-3 expected, 5x headroom.
// Without normalisation (the ReLU variant) an output is a sum of up to `keys` terms, not an average
// of V's rows: atol is then the tolerance times the largest |expected| (an output that cancels keeps
// the terms' rounding; seen on the H200: bf16, 0.012 off an output of 0.07).
// tf32 and bf16 must also show their rounding (norm above 5e-5 and 2e-4): a variant that silently
// ran in FP32 would pass the bounds and measure nothing. Plus the host-side checks, which need no
// GPU: shapes, the variant dispatch's argument checks and the 16-byte copy rule.
#include <cctype>
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "kernel_test_support.cuh"
#include "kernels/attention.cuh"
#include "kernels/attention_mma.cuh"

namespace stitch::kernels {
namespace {

using testing::all_close;
using testing::DeviceBuffer;
using testing::Tolerance;

enum class Mod { none, keep_mask, bias, relu_causal_mask };

struct AttentionCase {
  std::string name;
  int64_t batch, heads, queries, keys, head_dim, value_dim;
  bool causal;
  AttentionNorm norm;
  Mod mod;
  bool strided;  // operands laid out [batch, seq, heads, dim] (a permuted view)
  // Where the output goes: [batch, heads, queries, dim] contiguous, or rows of heads·dim in
  // (query, batch) or (batch, query) order.
  enum class Out { contiguous, seq_batch_rows, batch_seq_rows } out = Out::contiguous;
};

// The output strides of each AttentionCase::Out, [batch, head, query, col].
AttentionOutput output_for(const AttentionCase& c, float* data) {
  const int64_t row = c.heads * c.value_dim;
  switch (c.out) {
    case AttentionCase::Out::seq_batch_rows:
      return AttentionOutput{data, {row, c.value_dim, c.batch * row, 1}};
    case AttentionCase::Out::batch_seq_rows:
      return AttentionOutput{data, {c.queries * row, c.value_dim, row, 1}};
    case AttentionCase::Out::contiguous:
      break;
  }
  return AttentionOutput{data, {c.heads * c.queries * c.value_dim, c.queries * c.value_dim,
                                c.value_dim, 1}};
}

// The score functor of each case: what a generated program fuses into the scores.
struct TestScore {
  Mod mod;
  const unsigned char* keep;  // [batch, keys]
  const float* bias;          // [queries, keys]
  int64_t queries, keys;
  __device__ float operator()(int64_t b, int64_t, int64_t i, int64_t j, float s) const {
    switch (mod) {
      case Mod::keep_mask:
        return keep[b * keys + j] ? s : -INFINITY;
      case Mod::bias:
        return s + bias[i * keys + j];
      case Mod::relu_causal_mask:
        return j > i ? 0.0f : fmaxf(s, 0.0f);  // relu(masked_fill(tril == 0, -inf))
      case Mod::none:
        break;
    }
    return s;
  }
};

double host_score(const AttentionCase& c, const std::vector<unsigned char>& keep,
                  const std::vector<float>& bias, int64_t b, int64_t i, int64_t j, double s) {
  switch (c.mod) {
    case Mod::keep_mask:
      return keep[b * c.keys + j] ? s : -INFINITY;
    case Mod::bias:
      return s + bias[i * c.keys + j];
    case Mod::relu_causal_mask:
      return j > i ? 0.0 : std::max(s, 0.0);
    case Mod::none:
      break;
  }
  return s;
}

// Element (b, h, row, d) of an operand stored [b, h, row, d] or, strided, [b, row, h, d].
struct Layout {
  int64_t heads, rows, dims;
  bool strided;
  int64_t index(int64_t b, int64_t h, int64_t row, int64_t d) const {
    return strided ? ((b * rows + row) * heads + h) * dims + d
                   : ((b * heads + h) * rows + row) * dims + d;
  }
  AttentionOperand operand(const float* data) const {
    AttentionOperand o;
    o.data = data;
    if (strided) {
      o.stride[0] = rows * heads * dims, o.stride[1] = dims, o.stride[2] = heads * dims;
    } else {
      o.stride[0] = heads * rows * dims, o.stride[1] = rows * dims, o.stride[2] = dims;
    }
    o.stride[3] = 1;
    return o;
  }
};

std::vector<double> reference(const AttentionCase& c, double scale, const std::vector<float>& q,
                              const std::vector<float>& k, const std::vector<float>& v,
                              const std::vector<unsigned char>& keep,
                              const std::vector<float>& bias) {
  const Layout lq{c.heads, c.queries, c.head_dim, c.strided};
  const Layout lk{c.heads, c.keys, c.head_dim, c.strided};
  const Layout lv{c.heads, c.keys, c.value_dim, c.strided};
  std::vector<double> out(c.batch * c.heads * c.queries * c.value_dim, 0.0);
  std::vector<double> p(c.keys);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.queries; ++i) {
        double max = -INFINITY;
        for (int64_t j = 0; j < c.keys; ++j) {
          double s = 0;
          for (int64_t d = 0; d < c.head_dim; ++d)
            s += static_cast<double>(q[lq.index(b, h, i, d)]) * k[lk.index(b, h, j, d)];
          s = host_score(c, keep, bias, b, i, j, s * scale);
          if (c.causal && j > i) s = -INFINITY;
          p[j] = s;
          max = std::max(max, s);
        }
        double sum = 0;
        if (c.norm == AttentionNorm::softmax) {
          for (double& x : p) {
            x = std::exp(x - max);
            sum += x;
          }
        }
        for (int64_t d = 0; d < c.value_dim; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < c.keys; ++j)
            acc += p[j] * v[lv.index(b, h, j, d)];
          out[((b * c.heads + h) * c.queries + i) * c.value_dim + d] =
              c.norm == AttentionNorm::softmax ? acc / sum : acc;
        }
      }
  return out;
}

template <int kTile>
int prepare_and_launch(AttentionMath math, const AttentionShape& shape, const AttentionOperand& q,
                       const AttentionOperand& k, const AttentionOperand& v,
                       const AttentionOutput& out, const TestScore& mod) {
  const cudaError_t prepared = prepare_attention_math<kTile, TestScore>(math);
  if (prepared != cudaSuccess) return prepared;
  return launch_attention_math<kTile>(math, shape, q, k, v, out, mod, nullptr);
}

int launch_for(AttentionMath math, const AttentionShape& shape, const AttentionOperand& q,
               const AttentionOperand& k, const AttentionOperand& v, const AttentionOutput& out,
               const TestScore& mod) {
  const int64_t dims = std::max(shape.head_dim, shape.value_dim);
  if (dims <= 32) return prepare_and_launch<32>(math, shape, q, k, v, out, mod);
  if (dims <= 64) return prepare_and_launch<64>(math, shape, q, k, v, out, mod);
  if (dims <= 80) return prepare_and_launch<80>(math, shape, q, k, v, out, mod);
  return prepare_and_launch<128>(math, shape, q, k, v, out, mod);
}

// The bounds of the file comment.
struct MathBound {
  double tolerance;  // allclose atol = rtol
  double norm_max;   // relative error norm: above fails
  double norm_min;   // ... below fails too (the rounding must show); 0: none
};
MathBound bound_for(AttentionMath math) {
  switch (math) {
    case AttentionMath::fp32_fma:
    case AttentionMath::tf32x3:
      return {1e-4, 5e-5, 0.0};
    case AttentionMath::tf32:
      return {1e-2, 2e-3, 5e-5};
    case AttentionMath::bf16:
      return {1e-2, 1e-2, 2e-4};
  }
  return {0.0, 0.0, 0.0};
}

class AttentionTest : public ::testing::TestWithParam<std::tuple<AttentionCase, AttentionMath>> {};

TEST_P(AttentionTest, MeetsItsBoundAgainstTheDoubleReference) {
  REQUIRE_GPU();
  const AttentionCase& c = std::get<0>(GetParam());
  const AttentionMath math = std::get<1>(GetParam());
  const MathBound bound = bound_for(math);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  const auto q = testing::uniform_floats(c.batch * c.heads * c.queries * c.head_dim, 1, -1, 1);
  const auto k = testing::uniform_floats(c.batch * c.heads * c.keys * c.head_dim, 2, -1, 1);
  const auto v = testing::uniform_floats(c.batch * c.heads * c.keys * c.value_dim, 3, -1, 1);
  const auto bias = testing::uniform_floats(c.queries * c.keys, 4, -2, 2);
  std::vector<unsigned char> keep(c.batch * c.keys);
  for (size_t i = 0; i < keep.size(); ++i)
    keep[i] = (i * 7919) % 5 != 0 || i % c.keys == 0;  // every row keeps key 0
  const std::vector<double> expected = reference(c, scale, q, k, v, keep, bias);

  DeviceBuffer<float> dq(q.size()), dk(k.size()), dv(v.size()), dbias(bias.size());
  DeviceBuffer<float> dout(expected.size());
  DeviceBuffer<unsigned char> dkeep(keep.size());
  ASSERT_CUDA(dq.upload(q));
  ASSERT_CUDA(dk.upload(k));
  ASSERT_CUDA(dv.upload(v));
  ASSERT_CUDA(dbias.upload(bias));
  ASSERT_CUDA(dkeep.upload(keep));
  ASSERT_CUDA(cudaMemset(dout.data(), 0xff, dout.size() * sizeof(float)));  // NaN: all written
  AttentionShape shape;
  shape.batch = c.batch, shape.heads = c.heads, shape.queries = c.queries, shape.keys = c.keys;
  shape.head_dim = c.head_dim, shape.value_dim = c.value_dim;
  shape.scale = static_cast<float>(scale), shape.causal = c.causal, shape.norm = c.norm;
  const TestScore mod{c.mod, dkeep.data(), dbias.data(), c.queries, c.keys};
  ASSERT_CUDA(launch_for(
      math, shape, Layout{c.heads, c.queries, c.head_dim, c.strided}.operand(dq.data()),
      Layout{c.heads, c.keys, c.head_dim, c.strided}.operand(dk.data()),
      Layout{c.heads, c.keys, c.value_dim, c.strided}.operand(dv.data()),
      output_for(c, dout.data()), mod));
  ASSERT_CUDA(cudaDeviceSynchronize());
  // Back to [batch, heads, queries, dim] through the output's strides (each position once: NaN
  // where the kernel missed one, as the buffer was filled with NaN).
  const std::vector<float> stored = dout.download();
  const AttentionOutput placed = output_for(c, nullptr);
  std::vector<float> actual(expected.size());
  for (int64_t b = 0, e = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.queries; ++i)
        for (int64_t d = 0; d < c.value_dim; ++d, ++e)
          actual[e] = stored[b * placed.stride[0] + h * placed.stride[1] + i * placed.stride[2] +
                             d * placed.stride[3]];
  const std::string what = c.name + " " + attention_math_name(math);
  double atol = bound.tolerance;
  if (c.norm == AttentionNorm::none)
    for (double value : expected) atol = std::max(atol, bound.tolerance * std::abs(value));
  EXPECT_TRUE(all_close(actual, expected, Tolerance{atol, bound.tolerance, 0})) << what;
  double error = 0, norm = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    error += (actual[i] - expected[i]) * (actual[i] - expected[i]);
    norm += expected[i] * expected[i];
  }
  const double relative = std::sqrt(error / norm);
  EXPECT_LT(relative, bound.norm_max) << what << ": relative error norm";
  EXPECT_GT(relative, bound.norm_min) << what << ": no rounding visible — not this math?";
}

AttentionCase make(std::string name, int64_t batch, int64_t heads, int64_t queries, int64_t keys,
                   int64_t head_dim, int64_t value_dim, bool causal, AttentionNorm norm, Mod mod,
                   bool strided, AttentionCase::Out out = AttentionCase::Out::contiguous) {
  return {std::move(name), batch, heads, queries, keys, head_dim, value_dim, causal,
          norm, mod,       strided, out};
}

constexpr auto kSoftmax = AttentionNorm::softmax;
constexpr auto kNone = AttentionNorm::none;

const AttentionCase kCases[] = {
    make("plain_d64_L128", 2, 3, 128, 128, 64, 64, false, kSoftmax, Mod::none, false),
    make("ragged_d80_L77", 2, 4, 77, 77, 80, 80, false, kSoftmax, Mod::none, false),
    make("causal_d64_L100_strided", 2, 4, 100, 100, 64, 64, true, kSoftmax, Mod::none, true),
    make("causal_d128_L130", 1, 2, 130, 130, 128, 128, true, kSoftmax, Mod::none, false),
    make("causal_more_keys_d32", 1, 2, 40, 90, 32, 32, true, kSoftmax, Mod::none, false),
    make("keep_mask_d128_50x70", 2, 2, 50, 70, 128, 128, false, kSoftmax, Mod::keep_mask, false),
    make("bias_d96_v64", 2, 2, 65, 33, 96, 64, false, kSoftmax, Mod::bias, false),
    make("relu_causal_d32_L72", 2, 3, 72, 72, 32, 32, false, kNone, Mod::relu_causal_mask, true),
    make("odd_d30_L50", 2, 2, 50, 61, 30, 30, false, kSoftmax, Mod::none, false),  // 4-byte copies
    make("one_query_d64", 3, 1, 1, 200, 64, 64, false, kSoftmax, Mod::none, false),
    make("long_d64_L1024_causal", 1, 2, 1024, 1024, 64, 64, true, kSoftmax, Mod::none, false),
    // nn.MultiheadAttention's out-projection rows: [seq, batch, heads·dim] and batch-first.
    make("rows_seq_batch_d16_L96", 4, 8, 96, 96, 16, 16, false, kSoftmax, Mod::none, true,
         AttentionCase::Out::seq_batch_rows),
    make("rows_batch_seq_d64_L77_causal", 2, 3, 77, 77, 64, 64, true, kSoftmax, Mod::none, false,
         AttentionCase::Out::batch_seq_rows),
    make("rows_batch_seq_d30_relu", 2, 2, 50, 61, 30, 30, false, kNone, Mod::relu_causal_mask,
         true, AttentionCase::Out::batch_seq_rows),
};

INSTANTIATE_TEST_SUITE_P(
    Cases, AttentionTest,
    ::testing::Combine(::testing::ValuesIn(kCases),
                       ::testing::Values(AttentionMath::fp32_fma, AttentionMath::tf32x3,
                                         AttentionMath::tf32, AttentionMath::bf16)),
    [](const ::testing::TestParamInfo<std::tuple<AttentionCase, AttentionMath>>& info) {
      std::string name =
          std::get<0>(info.param).name + "_" + attention_math_name(std::get<1>(info.param));
      for (char& ch : name)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return name;
    });

TEST(AttentionShapeProblem, RefusesWhatTheKernelCannotRun) {
  AttentionShape s;
  s.batch = 1, s.heads = 1, s.queries = 8, s.keys = 8, s.head_dim = 64, s.value_dim = 64;
  EXPECT_STREQ(attention_shape_problem<64>(s), "");
  s.head_dim = 65;
  EXPECT_STRNE(attention_shape_problem<64>(s), "");
  s.head_dim = 64, s.value_dim = 0;
  EXPECT_STRNE(attention_shape_problem<64>(s), "");
  s.value_dim = 64, s.heads = 0;
  EXPECT_STRNE(attention_shape_problem<64>(s), "");
}

// The variant dispatch refuses bad arguments before touching the device.
TEST(AttentionMathDispatch, RefusesBadArgumentsWithoutLaunching) {
  AttentionShape s;
  s.batch = 1, s.heads = 1, s.queries = 8, s.keys = 8, s.head_dim = 64, s.value_dim = 64;
  float dummy = 0.0f;
  const AttentionOperand operand{&dummy, {0, 0, 64, 1}};
  const auto launch = [&](AttentionMath math, const AttentionShape& shape, float* out) {
    return launch_attention_math<64>(math, shape, operand, operand, operand, out,
                                     AttentionScoreIdentity{}, nullptr);
  };
  for (int unknown : {-1, kAttentionMathCount}) {
    EXPECT_EQ(launch(static_cast<AttentionMath>(unknown), s, &dummy), cudaErrorInvalidValue);
    EXPECT_EQ(prepare_attention_math<64>(static_cast<AttentionMath>(unknown)),
              cudaErrorInvalidValue);
  }
  for (AttentionMath math :
       {AttentionMath::fp32_fma, AttentionMath::tf32x3, AttentionMath::tf32, AttentionMath::bf16}) {
    EXPECT_EQ(launch(math, s, nullptr), cudaErrorInvalidValue) << attention_math_name(math);
    AttentionShape wide = s;
    wide.value_dim = 65;
    EXPECT_EQ(launch(math, wide, &dummy), cudaErrorInvalidValue) << attention_math_name(math);
    AttentionShape empty = s;
    empty.queries = 0;
    EXPECT_EQ(launch(math, empty, nullptr), cudaSuccess) << attention_math_name(math);
  }
}

TEST(AttentionMathDispatch, NamesEveryMath) {
  EXPECT_STREQ(attention_math_name(AttentionMath::fp32_fma), "fp32_fma");
  EXPECT_STREQ(attention_math_name(AttentionMath::tf32x3), "tf32x3");
  EXPECT_STREQ(attention_math_name(AttentionMath::tf32), "tf32");
  EXPECT_STREQ(attention_math_name(AttentionMath::bf16), "bf16");
  EXPECT_FALSE(attention_math_known(static_cast<AttentionMath>(kAttentionMathCount)));
}

// 16-byte copies only where every row start is 16-byte aligned and the dims fill whole vectors.
TEST(AttentionVec4Rows, NeedsContiguousAlignedRowsOfWholeVectors) {
  alignas(16) float data[8] = {};
  const AttentionOperand contiguous{data, {4096, 512, 64, 1}};
  EXPECT_TRUE(attention_vec4_rows(contiguous, 64));
  EXPECT_FALSE(attention_vec4_rows(contiguous, 30));  // a partial vector at the row's end
  AttentionOperand odd_rows = contiguous;
  odd_rows.stride[2] = 66;  // row 1 starts 8 bytes off
  EXPECT_FALSE(attention_vec4_rows(odd_rows, 64));
  AttentionOperand odd_heads = contiguous;
  odd_heads.stride[1] = 6;
  EXPECT_FALSE(attention_vec4_rows(odd_heads, 64));
  AttentionOperand transposed = contiguous;
  transposed.stride[3] = 2;
  EXPECT_FALSE(attention_vec4_rows(transposed, 64));
  AttentionOperand unaligned = contiguous;
  unaligned.data = data + 1;
  EXPECT_FALSE(attention_vec4_rows(unaligned, 64));
}

}  // namespace
}  // namespace stitch::kernels
