// Flash-style fused attention: out = norm(score(scale * Q Kᵀ)) V in one kernel, the [queries, keys]
// scores never written to memory. Per (batch, head) and query row i:
//
//   s(i, j) = mod(b, h, i, j, scale * q[i] . k[j])     (masks, biases, ReLU: the generated functor)
//   s(i, j) = -inf for j > i when causal               (top-left aligned, as torch's is_causal)
//   softmax: out[i] = sum_j exp(s - max) v[j] / sum_j exp(s - max), online over key tiles
//   none:    out[i] = sum_j s(i, j) v[j]               (relu(scores) @ v: the functor applies relu)
//
// The generated functor owns what the plan fused into the scores:
//
//   struct ScoreMod { __device__ float operator()(int64_t b, int64_t h, int64_t i, int64_t j,
//                                                 float s) const; };
//
// Arithmetic: FP32 FMA throughout (FP32-accurate on every precision track; expf, not __expf).
// Tiles: a 128-thread block owns kAttentionBlockM = 64 query rows of one (batch, head); it walks the
// keys kAttentionBlockN = 64 at a time (a causal block stops after its last row's key). Each thread
// holds 4 rows x 8 keys of the score tile (keys tx, tx + 8, ...: the 8 threads of a row are
// consecutive lanes, so row max and sum are three shuffles) and 4 rows x kHeadDimTile / 8 output
// columns. Q, K, V and P tiles live in shared memory (rows padded by one float against bank
// conflicts): about 115 KiB at kHeadDimTile 128, so prepare_attention raises the kernel's dynamic
// shared memory limit once, at init. Any sequence lengths (tails are masked), head and value dims
// up to kHeadDimTile (a multiple of 8, at most 128), any strides — the output's too, so a plan can
// store [batch, heads, queries, dim] straight into the [seq, batch, heads·dim] or
// [batch, seq, heads·dim] rows the out-projection reads (no transpose copy after the kernel).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace stitch::kernels {

inline constexpr int kAttentionBlockM = 64;
inline constexpr int kAttentionBlockN = 64;
inline constexpr int kAttentionThreads = 128;
inline constexpr int kAttentionMaxHeadDim = 128;

// One operand, indexed [batch, head, row, col] through its strides (elements).
struct AttentionOperand {
  const float* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};
};

// The output, indexed [batch, head, query, col] through its strides (elements); the positions
// must not overlap.
struct AttentionOutput {
  float* data = nullptr;
  int64_t stride[4] = {0, 0, 0, 0};
};

enum class AttentionNorm : int { softmax = 0, none = 1 };

struct AttentionShape {
  int64_t batch = 1, heads = 1, queries = 0, keys = 0, head_dim = 0, value_dim = 0;
  float scale = 1.0f;
  bool causal = false;
  AttentionNorm norm = AttentionNorm::softmax;
  // A softmax row with every key masked: 0 (scaled_dot_product_attention's safe softmax) instead
  // of 0 / 0 = NaN (softmax of an all -inf row, as torch.softmax gives).
  bool empty_rows_zero = false;
};

// [batch, heads, queries, value_dim] contiguous at `data`.
inline AttentionOutput contiguous_attention_output(float* data, const AttentionShape& s) {
  return AttentionOutput{data, {s.heads * s.queries * s.value_dim, s.queries * s.value_dim,
                                s.value_dim, 1}};
}

// The identity score functor: plain softmax(scale * Q Kᵀ) V.
struct AttentionScoreIdentity {
  __device__ float operator()(int64_t, int64_t, int64_t, int64_t, float s) const { return s; }
};

namespace detail {

template <int kHeadDimTile>
constexpr size_t attention_smem_bytes() {
  return sizeof(float) *
         (static_cast<size_t>(kAttentionBlockM) * (kHeadDimTile + 1) +  // Q
          static_cast<size_t>(kAttentionBlockN) * (kHeadDimTile + 1) +  // K
          static_cast<size_t>(kAttentionBlockN) * kHeadDimTile +        // V
          static_cast<size_t>(kAttentionBlockM) * (kAttentionBlockN + 1));  // P
}

struct AttentionParams {
  AttentionShape shape;
  AttentionOperand q, k, v;
  AttentionOutput out;
  int64_t tiles_m = 0;
};

// Rows [rows0, rows0 + kRows) x cols [0, kHeadDimTile) of one (batch, head)'s operand into shared
// memory with row pitch `pitch`; zeros outside [0, rows) x [0, cols).
template <int kRows, int kHeadDimTile>
__device__ void load_attention_tile(float* tile, int pitch, const float* base,
                                    const int64_t* stride, int64_t rows0, int64_t rows,
                                    int64_t cols) {
  for (int e = threadIdx.x; e < kRows * kHeadDimTile; e += kAttentionThreads) {
    const int r = e / kHeadDimTile, d = e % kHeadDimTile;
    const int64_t row = rows0 + r;
    tile[r * pitch + d] = row < rows && d < cols ? base[row * stride[2] + d * stride[3]] : 0.0f;
  }
}

template <int kHeadDimTile, class ScoreMod>
__global__ void __launch_bounds__(kAttentionThreads)
    attention_kernel(AttentionParams p, ScoreMod mod) {
  constexpr int kBM = kAttentionBlockM, kBN = kAttentionBlockN;
  constexpr int kPitch = kHeadDimTile + 1, kCols = kHeadDimTile / 8;
  extern __shared__ float smem[];
  float* sq = smem;
  float* sk = sq + kBM * kPitch;
  float* sv = sk + kBN * kPitch;
  float* sp = sv + kBN * kHeadDimTile;
  const AttentionShape& s = p.shape;
  // Heaviest (last, under a causal mask) query tiles first.
  const int64_t tile = p.tiles_m - 1 - static_cast<int64_t>(blockIdx.x) % p.tiles_m;
  const int64_t bh = static_cast<int64_t>(blockIdx.x) / p.tiles_m;
  const int64_t b = bh / s.heads, h = bh % s.heads;
  const int64_t m0 = tile * kBM;
  const int tx = threadIdx.x % 8, ty = threadIdx.x / 8;
  const float* q = p.q.data + b * p.q.stride[0] + h * p.q.stride[1];
  const float* k = p.k.data + b * p.k.stride[0] + h * p.k.stride[1];
  const float* v = p.v.data + b * p.v.stride[0] + h * p.v.stride[1];
  load_attention_tile<kBM, kHeadDimTile>(sq, kPitch, q, p.q.stride, m0, s.queries, s.head_dim);

  const bool softmax = s.norm == AttentionNorm::softmax;
  float o[4][kCols];
  float row_max[4], row_sum[4];
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.0f;
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      o[r][c] = 0.0f;
  }
  const int64_t key_end = s.causal && m0 + kBM < s.keys ? m0 + kBM : s.keys;
  for (int64_t n0 = 0; n0 < key_end; n0 += kBN) {
    __syncthreads();  // the previous tile's K, V and P are consumed (and Q is stored)
    load_attention_tile<kBN, kHeadDimTile>(sk, kPitch, k, p.k.stride, n0, s.keys, s.head_dim);
    load_attention_tile<kBN, kHeadDimTile>(sv, kHeadDimTile, v, p.v.stride, n0, s.keys,
                                           s.value_dim);
    __syncthreads();
    float acc[4][8];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 8; ++c)
        acc[r][c] = 0.0f;
#pragma unroll 8
    for (int d = 0; d < kHeadDimTile; ++d) {
      float qd[4], kd[8];
#pragma unroll
      for (int r = 0; r < 4; ++r)
        qd[r] = sq[(ty * 4 + r) * kPitch + d];
#pragma unroll
      for (int c = 0; c < 8; ++c)
        kd[c] = sk[(tx + 8 * c) * kPitch + d];
#pragma unroll
      for (int r = 0; r < 4; ++r)
#pragma unroll
        for (int c = 0; c < 8; ++c)
          acc[r][c] = fmaf(qd[r], kd[c], acc[r][c]);
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int64_t i = m0 + ty * 4 + r;
      float tile_max = -INFINITY;
#pragma unroll
      for (int c = 0; c < 8; ++c) {
        const int64_t j = n0 + tx + 8 * c;
        const bool inside = i < s.queries && j < s.keys && !(s.causal && j > i);
        float x = inside ? mod(b, h, i, j, acc[r][c] * s.scale) : (softmax ? -INFINITY : 0.0f);
        acc[r][c] = x;
        tile_max = fmaxf(tile_max, x);
      }
      if (softmax) {
#pragma unroll
        for (int lane = 1; lane < 8; lane <<= 1)
          tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, lane));
        const float next_max = fmaxf(row_max[r], tile_max);
        const float base = next_max == -INFINITY ? 0.0f : next_max;
        const float rescale = expf(row_max[r] - base);
        float sum = 0.0f;
#pragma unroll
        for (int c = 0; c < 8; ++c) {
          acc[r][c] = expf(acc[r][c] - base);
          sum += acc[r][c];
        }
        row_sum[r] = row_sum[r] * rescale + sum;  // this thread's keys; combined at the end
        row_max[r] = next_max;
#pragma unroll
        for (int c = 0; c < kCols; ++c)
          o[r][c] *= rescale;
      }
#pragma unroll
      for (int c = 0; c < 8; ++c)
        sp[(ty * 4 + r) * (kBN + 1) + tx + 8 * c] = acc[r][c];
    }
    __syncthreads();
#pragma unroll 4
    for (int c = 0; c < kBN; ++c) {
      float pc[4];
#pragma unroll
      for (int r = 0; r < 4; ++r)
        pc[r] = sp[(ty * 4 + r) * (kBN + 1) + c];
#pragma unroll
      for (int d = 0; d < kCols; ++d) {
        const float vd = sv[c * kHeadDimTile + tx + 8 * d];
#pragma unroll
        for (int r = 0; r < 4; ++r)
          o[r][d] = fmaf(pc[r], vd, o[r][d]);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    float scale = 1.0f;
    bool zero = false;
    if (softmax) {
      float sum = row_sum[r];
#pragma unroll
      for (int lane = 1; lane < 8; lane <<= 1)
        sum += __shfl_xor_sync(0xffffffffu, sum, lane);
      zero = sum == 0.0f && s.empty_rows_zero;
      scale = 1.0f / sum;
    }
    const int64_t i = m0 + ty * 4 + r;
    if (i >= s.queries) continue;
    float* out = p.out.data + b * p.out.stride[0] + h * p.out.stride[1] + i * p.out.stride[2];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int d = tx + 8 * c;
      if (d < s.value_dim) out[d * p.out.stride[3]] = zero ? 0.0f : o[r][c] * scale;
    }
  }
}

}  // namespace detail

// The shape's problem, or "" when launch_attention<kHeadDimTile> can run it.
template <int kHeadDimTile>
inline const char* attention_shape_problem(const AttentionShape& s) {
  static_assert(kHeadDimTile % 8 == 0 && kHeadDimTile >= 8 && kHeadDimTile <= kAttentionMaxHeadDim,
                "head-dim tile: a multiple of 8 up to 128");
  if (s.batch < 0 || s.heads < 1 || s.queries < 0 || s.keys < 0) return "negative sizes";
  if (s.head_dim < 1 || s.head_dim > kHeadDimTile || s.value_dim < 1 ||
      s.value_dim > kHeadDimTile)
    return "head_dim and value_dim must be in [1, kHeadDimTile]";
  if (s.batch * s.heads * ((s.queries + kAttentionBlockM - 1) / kAttentionBlockM) > INT32_MAX)
    return "too many query tiles for one launch";
  return "";
}

// Lets attention_kernel<kHeadDimTile, ScoreMod> use its shared memory; once per device before the
// first launch, outside any graph capture (a generated program calls it at init).
template <int kHeadDimTile, class ScoreMod = AttentionScoreIdentity>
inline cudaError_t prepare_attention() {
  return cudaFuncSetAttribute(detail::attention_kernel<kHeadDimTile, ScoreMod>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(detail::attention_smem_bytes<kHeadDimTile>()));
}

// out [batch, heads, queries, value_dim] (through out's strides) = attention(q, k, v) as the file
// comment says; q [.., queries, head_dim], k [.., keys, head_dim], v [.., keys, value_dim] through
// their strides. cudaErrorInvalidValue for a shape attention_shape_problem refuses or a null
// pointer; else the launch's status.
template <int kHeadDimTile, class ScoreMod = AttentionScoreIdentity>
inline int launch_attention(const AttentionShape& shape, const AttentionOperand& q,
                            const AttentionOperand& k, const AttentionOperand& v,
                            const AttentionOutput& out, const ScoreMod& mod, cudaStream_t stream) {
  if (attention_shape_problem<kHeadDimTile>(shape)[0] != '\0') return cudaErrorInvalidValue;
  if (shape.batch == 0 || shape.queries == 0) return cudaSuccess;
  if (q.data == nullptr || k.data == nullptr || v.data == nullptr || out.data == nullptr)
    return cudaErrorInvalidValue;
  detail::AttentionParams p;
  p.shape = shape, p.q = q, p.k = k, p.v = v, p.out = out;
  p.tiles_m = (shape.queries + kAttentionBlockM - 1) / kAttentionBlockM;
  const dim3 grid(static_cast<unsigned>(p.tiles_m * shape.batch * shape.heads));
  detail::attention_kernel<kHeadDimTile, ScoreMod>
      <<<grid, kAttentionThreads, detail::attention_smem_bytes<kHeadDimTile>(), stream>>>(p, mod);
  return cudaGetLastError();
}

// The same with out [batch, heads, queries, value_dim] contiguous.
template <int kHeadDimTile, class ScoreMod = AttentionScoreIdentity>
inline int launch_attention(const AttentionShape& shape, const AttentionOperand& q,
                            const AttentionOperand& k, const AttentionOperand& v, float* out,
                            const ScoreMod& mod, cudaStream_t stream) {
  return launch_attention<kHeadDimTile>(shape, q, k, v, contiguous_attention_output(out, shape),
                                        mod, stream);
}

}  // namespace stitch::kernels
