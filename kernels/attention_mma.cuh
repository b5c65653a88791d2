// Tensor-core variants of the fused attention of attention.cuh — the same contract (AttentionShape,
// AttentionOperand, the ScoreMod functor, a contiguous float32 output), the two products on
// mma.sync (sm_80 and later), the softmax in FP32 on the CUDA cores — and the launch entry that
// picks a variant by precision (AttentionMath):
//
//   fp32_fma  attention.cuh's FP32 FMA kernel                                 (fp32 track)
//   tf32x3    split precision: x = big + small (TF32 each), three TF32 mmas per product
//             (small·big, big·small, big·big; small·small is below FP32 rounding)  (fp32 track)
//   tf32      operands rounded to TF32 (10-bit mantissa), one mma per product    (tf32 track)
//   bf16      operands rounded to BF16 (8-bit mantissa) in the kernel, FP32 accumulation
//                                                                                (bf16 track)
//
// Memory stays float32 on every track, as the GEMMs' (kernels/matmul.cuh: cuBLASLt's FAST_TF32 and
// FAST_16BF compute types take FP32 data and round it inside): each element is rounded where it is
// used, after the tile landed in shared memory; P (the probabilities) is rounded the same way
// before P·V. TF32 rounding is round_tf32's (to nearest, ties away, as cvt.rna), BF16 is
// __floats2bfloat162_rn's (to nearest even).
//
// Accuracy of tf32x3 (why it can stand on the fp32 track, bound 5e-5 on the relative error norm):
// the split keeps 21-22 of the 24 mantissa bits of each operand, the dropped small·small term is
// ~2^-22 of a product, so each product is exact to FP32 rounding; what remains is the tensor core's
// accumulation, which truncates as it adds (kernels/matmul_tf32x3.cuh has the measurements). As in
// gemm_tf32x3.cuh (1.2e-7 to 3.3e-7 measured on an H200 with 32-element chunks), the accumulators
// here take a bounded number of products and are then added in FP32 with round-to-nearest on the
// CUDA cores: Q·Kᵀ in chunks of 32 head dims (96 products of the three classes), P·V per 64-key
// tile (192), the tile's sum folded into the output as o = o·rescale + part. The expected error is
// then that of FP32 FMA (~1e-7 to 1e-6), far under 5e-5. tf32 and bf16 round each operand once
// (relative 2^-11 and 2^-9 per element: ~5e-4 and ~2e-3 on a score of unit size, then through the
// softmax): within their tracks' 1e-2, not the fp32 bound — and they accumulate straight into the
// output (FA2's o·rescale, then mma), the truncation's ~1e-6 irrelevant there. exp: expf on the
// fp32 variants, __expf on tf32 / bf16.
//
// Tiles: a 128-thread block (4 warps) owns kAttentionBlockM = 64 query rows of one (batch, head),
// each warp 16 rows, and walks the keys kAttentionBlockN = 64 at a time (a causal block stops after
// its last row's key). Q, K and V tiles live in shared memory as FP32 (Q and K rows padded by 8
// floats, V rows by 4: the fragment loads below are then free of bank conflicts, for Q and K when
// the tile is a multiple of 16 — 32, 48, 64, 80, 96, 128), loaded by cp.async (16 bytes when the
// operand's rows are contiguous and aligned, 4 otherwise; zeros outside the sequence and the dims).
// The V tile's copy overlaps Q·Kᵀ and the next K tile's copy overlaps P·V. 101 KiB of shared memory
// at a head-dim tile of 128; prepare_attention_math raises the limit once, at init. The scores (a
// warp's 16 x 64) and the output (16 x head-dim tile) stay in registers in the mma accumulator
// layout; P goes from the score accumulators to P·V's A operand without shared memory (the layouts
// below line up).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k8 / mma.m16n8k16"), lane = 4g + t
// (g = groupID = lane >> 2, t = threadID_in_group = lane % 4):
//   m16n8k8 .tf32: A (16 x 8, row): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4);
//                  B (8 x 8, col):  b0 (k t, n g), b1 (k t + 4, n g)
//   m16n8k16 .bf16: A (16 x 16, row), four .b32 each holding two elements, the lower column in the
//                  low half: {a0,a1} (g, 2t..2t+1), {a2,a3} (g + 8, 2t..2t+1),
//                  {a4,a5} (g, 2t+8..2t+9), {a6,a7} (g + 8, 2t+8..2t+9);
//                  B (16 x 8, col): {b0,b1} (k 2t..2t+1, n g), {b2,b3} (k 2t+8..2t+9, n g)
//   C / D (16 x 8, f32), both shapes: c0 (g, 2t), c1 (g, 2t+1), c2 (g + 8, 2t), c3 (g + 8, 2t+1)
// The TF32 mmas feed their K slots a permutation of the 8 summed indices (slot t <- index 2t, slot
// t + 4 <- index 2t + 1, the same for A and B, as gemm_tf32x3.cuh does), so that a thread's two
// values are adjacent: one 8-byte load of Q and of K, and P's accumulator pair (c0, c1) of a key
// group is exactly the A fragment pair (a0, a2) of P·V — no shuffle. For BF16 the accumulators of
// key groups 2kk and 2kk + 1 are P·V's A fragment of keys [16kk, 16kk + 16) as they stand.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "attention.cuh"
#include "gemm_tf32x3_common.cuh"

namespace stitch::kernels {

// The arithmetic of the two products (file comment). Values are fixed: the Planner's tunable
// attention_math (src/plan/kernel_choice.h) stores them.
enum class AttentionMath : int { fp32_fma = 0, tf32x3 = 1, tf32 = 2, bf16 = 3 };
inline constexpr int kAttentionMathCount = 4;

inline const char* attention_math_name(AttentionMath math) {
  switch (math) {
    case AttentionMath::fp32_fma:
      return "fp32_fma";
    case AttentionMath::tf32x3:
      return "tf32x3";
    case AttentionMath::tf32:
      return "tf32";
    case AttentionMath::bf16:
      return "bf16";
  }
  return "unknown";
}

namespace detail {

// The shared-memory tiles of the mma kernels: head dims rounded up to the mma's K (8 TF32, 16
// BF16), the pad columns zero.
template <int kHeadDimTile, AttentionMath kMath>
struct AttentionMmaTile {
  static constexpr int kK = kMath == AttentionMath::bf16 ? 16 : 8;
  static constexpr int kDim = (kHeadDimTile + kK - 1) / kK * kK;
  static constexpr int kQkPitch = kDim + 8;    // Q and K rows: 8-byte loads by (row g, column 2t)
  static constexpr int kVPitch = kDim + 4;     // V rows: 4-byte loads by (row 2t, column g)
  static constexpr int kDimGroups = kDim / 8;  // the output's n8 tiles
  static constexpr size_t kSmemBytes =
      sizeof(float) * (static_cast<size_t>(kAttentionBlockM) * kQkPitch +
                       static_cast<size_t>(kAttentionBlockN) * kQkPitch +
                       static_cast<size_t>(kAttentionBlockN) * kVPitch);
};

struct AttentionMmaParams {
  AttentionParams base;
  bool q_vec4 = false, k_vec4 = false, v_vec4 = false;  // 16-byte copies (attention_vec4_rows)
};

// Rows [row0, row0 + kRows) x columns [0, kDim) of one (batch, head)'s operand into shared memory
// (row pitch `pitch`) by cp.async; zeros outside [0, rows) x [0, cols). vec4: columns contiguous,
// every row start 16-byte aligned and cols a multiple of 4 (attention_vec4_rows).
template <int kRows, int kDim>
__device__ __forceinline__ void copy_attention_tile(float* tile, int pitch, const float* base,
                                                    const int64_t* stride, int64_t row0,
                                                    int64_t rows, int64_t cols, bool vec4) {
  if (vec4) {
    constexpr int kGroups = kDim / 4;
    for (int e = threadIdx.x; e < kRows * kGroups; e += kAttentionThreads) {
      const int r = e / kGroups, c = e % kGroups * 4;
      const int64_t row = row0 + r;
      const bool ok = row < rows && c < cols;
      cp_async_16(tile + r * pitch + c, ok ? base + row * stride[2] + c : base, ok);
    }
  } else {
    for (int e = threadIdx.x; e < kRows * kDim; e += kAttentionThreads) {
      const int r = e / kDim, c = e % kDim;
      const int64_t row = row0 + r;
      const bool ok = row < rows && c < cols;
      cp_async_4(tile + r * pitch + c, ok ? base + row * stride[2] + c * stride[3] : base, ok);
    }
  }
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);  // .x (lo) in the low half
  uint32_t bits;
  memcpy(&bits, &pair, sizeof(bits));
  return bits;
}

// c += a·b on the tensor cores, m16n8k16 BF16 with FP32 accumulators (layouts: file comment).
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The TF32 (tf32) or split TF32 (tf32x3) product of one m16n8k8 step: c += a·b, the fragments
// given as FP32 values in mma order.
template <AttentionMath kMath>
__device__ __forceinline__ void mma_tf32_values(float (&c)[4], const float (&a)[4],
                                                const float (&b)[2]) {
  if constexpr (kMath == AttentionMath::tf32x3) {
    uint32_t a_big[4], a_small[4], b_big[2], b_small[2];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      split_tf32(a[e], a_big[e], a_small[e]);
    split_tf32(b[0], b_big[0], b_small[0]);
    split_tf32(b[1], b_big[1], b_small[1]);
    mma_tf32(c, a_small, b_big);  // smallest first
    mma_tf32(c, a_big, b_small);
    mma_tf32(c, a_big, b_big);
  } else {
    const uint32_t at[4] = {round_tf32(a[0]), round_tf32(a[1]), round_tf32(a[2]), round_tf32(a[3])};
    const uint32_t bt[2] = {round_tf32(b[0]), round_tf32(b[1])};
    mma_tf32(c, at, bt);
  }
}

// The warp's 16 x 64 scores s = Q Kᵀ (unscaled) of this key tile, in accumulator layout: s[j] is
// keys [8j, 8j + 8). sq: the warp's first Q row; sk: the K tile.
template <int kHeadDimTile, AttentionMath kMath>
__device__ __forceinline__ void attention_scores(const float* sq, const float* sk, int g, int t,
                                                 float (&s)[kAttentionBlockN / 8][4]) {
  using Tile = AttentionMmaTile<kHeadDimTile, kMath>;
  constexpr int kPitch = Tile::kQkPitch, kGroups = kAttentionBlockN / 8;
#pragma unroll
  for (int j = 0; j < kGroups; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      s[j][e] = 0.0f;
  if constexpr (kMath == AttentionMath::bf16) {
#pragma unroll
    for (int kk = 0; kk < Tile::kDim; kk += 16) {
      // 8-byte loads: (row, 2t) and (row, 2t + 1) are adjacent, the offset even.
      const float* top = sq + g * kPitch + kk + 2 * t;
      const float2 q0 = *reinterpret_cast<const float2*>(top);
      const float2 q1 = *reinterpret_cast<const float2*>(top + 8 * kPitch);
      const float2 q2 = *reinterpret_cast<const float2*>(top + 8);
      const float2 q3 = *reinterpret_cast<const float2*>(top + 8 * kPitch + 8);
      const uint32_t a[4] = {pack_bf16(q0.x, q0.y), pack_bf16(q1.x, q1.y), pack_bf16(q2.x, q2.y),
                             pack_bf16(q3.x, q3.y)};
#pragma unroll
      for (int j = 0; j < kGroups; ++j) {
        const float* key = sk + (8 * j + g) * kPitch + kk + 2 * t;
        const float2 k0 = *reinterpret_cast<const float2*>(key);
        const float2 k1 = *reinterpret_cast<const float2*>(key + 8);
        const uint32_t b[2] = {pack_bf16(k0.x, k0.y), pack_bf16(k1.x, k1.y)};
        mma_bf16(s[j], a, b);
      }
    }
  } else {
    // tf32x3: chunks of 32 dims in fresh accumulators, added in FP32 (file comment).
    constexpr int kChunk = kMath == AttentionMath::tf32x3 ? 32 : Tile::kDim;
#pragma unroll
    for (int k0 = 0; k0 < Tile::kDim; k0 += kChunk) {
      float part[kGroups][4];
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          part[j][e] = 0.0f;
#pragma unroll
      for (int kk = k0; kk < k0 + kChunk && kk < Tile::kDim; kk += 8) {
        const float2 top = *reinterpret_cast<const float2*>(sq + g * kPitch + kk + 2 * t);
        const float2 bottom = *reinterpret_cast<const float2*>(sq + (g + 8) * kPitch + kk + 2 * t);
        const float a[4] = {top.x, bottom.x, top.y, bottom.y};
#pragma unroll
        for (int j = 0; j < kGroups; ++j) {
          const float2 key =
              *reinterpret_cast<const float2*>(sk + (8 * j + g) * kPitch + kk + 2 * t);
          const float b[2] = {key.x, key.y};
          mma_tf32_values<kMath>(part[j], a, b);
        }
      }
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          s[j][e] += part[j][e];  // round to nearest, on the CUDA cores
    }
  }
}

// acc += P V over this key tile for the output columns [8 kFirst, 8 (kFirst + kCount)): p in the
// score accumulator layout, sv the V tile; acc[d] is columns [8 (kFirst + d), 8 (kFirst + d) + 8).
template <int kHeadDimTile, AttentionMath kMath, int kFirst, int kCount>
__device__ __forceinline__ void attention_values(const float (&p)[kAttentionBlockN / 8][4],
                                                 const float* sv, int g, int t,
                                                 float (&acc)[kCount][4]) {
  using Tile = AttentionMmaTile<kHeadDimTile, kMath>;
  static_assert(kFirst >= 0 && kCount >= 1 && kFirst + kCount <= Tile::kDimGroups);
  constexpr int kPitch = Tile::kVPitch;
  if constexpr (kMath == AttentionMath::bf16) {
#pragma unroll
    for (int kk = 0; kk < kAttentionBlockN / 16; ++kk) {
      const uint32_t a[4] = {pack_bf16(p[2 * kk][0], p[2 * kk][1]),
                             pack_bf16(p[2 * kk][2], p[2 * kk][3]),
                             pack_bf16(p[2 * kk + 1][0], p[2 * kk + 1][1]),
                             pack_bf16(p[2 * kk + 1][2], p[2 * kk + 1][3])};
      const float* rows = sv + (16 * kk + 2 * t) * kPitch + 8 * kFirst + g;
#pragma unroll
      for (int d = 0; d < kCount; ++d) {
        const float* col = rows + 8 * d;
        const uint32_t b[2] = {pack_bf16(col[0], col[kPitch]),
                               pack_bf16(col[8 * kPitch], col[9 * kPitch])};
        mma_bf16(acc[d], a, b);
      }
    }
  } else {
#pragma unroll
    for (int j = 0; j < kAttentionBlockN / 8; ++j) {
      // K slot t <- key 8j + 2t, slot t + 4 <- key 8j + 2t + 1.
      const float a[4] = {p[j][0], p[j][2], p[j][1], p[j][3]};
      const float* rows = sv + (8 * j + 2 * t) * kPitch + 8 * kFirst + g;
#pragma unroll
      for (int d = 0; d < kCount; ++d) {
        const float b[2] = {rows[8 * d], rows[8 * d + kPitch]};
        mma_tf32_values<kMath>(acc[d], a, b);
      }
    }
  }
}

// tf32x3: o = o·rescale + this tile's P·V over output groups [kFirst, kFirst + kCount), the
// tensor cores summing into fresh accumulators (file comment). Called per half of the output
// columns, so the fresh accumulators cost half as many registers.
template <int kHeadDimTile, int kFirst, int kCount>
__device__ __forceinline__ void fold_split_values(
    const float (&p)[kAttentionBlockN / 8][4], const float* sv, int g, int t,
    const float (&rescale)[2],
    float (&o)[AttentionMmaTile<kHeadDimTile, AttentionMath::tf32x3>::kDimGroups][4]) {
  float part[kCount][4];
#pragma unroll
  for (int d = 0; d < kCount; ++d)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      part[d][e] = 0.0f;
  attention_values<kHeadDimTile, AttentionMath::tf32x3, kFirst, kCount>(p, sv, g, t, part);
#pragma unroll
  for (int d = 0; d < kCount; ++d)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o[kFirst + d][e] = fmaf(o[kFirst + d][e], rescale[e >> 1], part[d][e]);  // round to nearest
}

template <int kHeadDimTile, AttentionMath kMath, class ScoreMod>
__global__ void __launch_bounds__(kAttentionThreads)
    attention_mma_kernel(AttentionMmaParams params, ScoreMod mod) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  (void)params, (void)mod;
  __trap();  // mma.sync m16n8k8 TF32 / m16n8k16 BF16 need sm_80
#else
  using Tile = AttentionMmaTile<kHeadDimTile, kMath>;
  constexpr int kBM = kAttentionBlockM, kBN = kAttentionBlockN, kGroups = kBN / 8;
  constexpr bool kSplit = kMath == AttentionMath::tf32x3;
  static_assert(kBM == 16 * (kAttentionThreads / 32), "a warp owns 16 query rows");
  extern __shared__ float4 attention_smem[];
  float* sq = reinterpret_cast<float*>(attention_smem);
  float* sk = sq + kBM * Tile::kQkPitch;
  float* sv = sk + kBN * Tile::kQkPitch;
  const AttentionParams& p = params.base;
  const AttentionShape& s = p.shape;
  // Heaviest (last, under a causal mask) query tiles first.
  const int64_t tile = p.tiles_m - 1 - static_cast<int64_t>(blockIdx.x) % p.tiles_m;
  const int64_t bh = static_cast<int64_t>(blockIdx.x) / p.tiles_m;
  const int64_t b = bh / s.heads, h = bh % s.heads;
  const int64_t m0 = tile * kBM;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const float* q = p.q.data + b * p.q.stride[0] + h * p.q.stride[1];
  const float* k = p.k.data + b * p.k.stride[0] + h * p.k.stride[1];
  const float* v = p.v.data + b * p.v.stride[0] + h * p.v.stride[1];
  const int64_t key_end = s.causal && m0 + kBM < s.keys ? m0 + kBM : s.keys;
  copy_attention_tile<kBM, Tile::kDim>(sq, Tile::kQkPitch, q, p.q.stride, m0, s.queries, s.head_dim,
                                       params.q_vec4);
  if (key_end > 0)
    copy_attention_tile<kBN, Tile::kDim>(sk, Tile::kQkPitch, k, p.k.stride, 0, s.keys, s.head_dim,
                                         params.k_vec4);
  cp_async_commit();

  const bool softmax = s.norm == AttentionNorm::softmax;
  const int64_t row[2] = {m0 + warp * 16 + g, m0 + warp * 16 + g + 8};
  float o[Tile::kDimGroups][4];
#pragma unroll
  for (int d = 0; d < Tile::kDimGroups; ++d)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      o[d][e] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  for (int64_t n0 = 0; n0 < key_end; n0 += kBN) {
    cp_async_wait<0>();
    __syncthreads();  // K (and Q) landed; every warp is done with the previous V tile
    copy_attention_tile<kBN, Tile::kDim>(sv, Tile::kVPitch, v, p.v.stride, n0, s.keys, s.value_dim,
                                         params.v_vec4);
    cp_async_commit();
    float sc[kGroups][4];
    attention_scores<kHeadDimTile, kMath>(sq + warp * 16 * Tile::kQkPitch, sk, g, t, sc);
    float rescale[2] = {1.0f, 1.0f};
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t i = row[r];
      float tile_max = -INFINITY;
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int64_t key = n0 + 8 * j + 2 * t + c;
          const bool inside = i < s.queries && key < s.keys && !(s.causal && key > i);
          const float x =
              inside ? mod(b, h, i, key, sc[j][2 * r + c] * s.scale) : (softmax ? -INFINITY : 0.0f);
          sc[j][2 * r + c] = x;
          tile_max = fmaxf(tile_max, x);
        }
      if (!softmax) continue;
      // The row's 64 keys are spread over the 4 lanes of a quad.
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
      tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
      const float next_max = fmaxf(row_max[r], tile_max);
      const float base = next_max == -INFINITY ? 0.0f : next_max;
      rescale[r] =
          kMath == AttentionMath::tf32x3 ? expf(row_max[r] - base) : __expf(row_max[r] - base);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < kGroups; ++j)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const float x = sc[j][2 * r + c] - base;
          const float e = kMath == AttentionMath::tf32x3 ? expf(x) : __expf(x);
          sc[j][2 * r + c] = e;
          sum += e;
        }
      row_sum[r] = row_sum[r] * rescale[r] + sum;  // this lane's keys; the quad's summed at the end
      row_max[r] = next_max;
    }
    cp_async_wait<0>();
    __syncthreads();  // V landed; every warp is done with this K tile
    if (n0 + kBN < key_end) {
      copy_attention_tile<kBN, Tile::kDim>(sk, Tile::kQkPitch, k, p.k.stride, n0 + kBN, s.keys,
                                           s.head_dim, params.k_vec4);
      cp_async_commit();
    }
    if constexpr (kSplit) {
      constexpr int kHalf = (Tile::kDimGroups + 1) / 2;
      fold_split_values<kHeadDimTile, 0, kHalf>(sc, sv, g, t, rescale, o);
      if constexpr (Tile::kDimGroups > kHalf)
        fold_split_values<kHeadDimTile, kHalf, Tile::kDimGroups - kHalf>(sc, sv, g, t, rescale, o);
    } else {
#pragma unroll
      for (int d = 0; d < Tile::kDimGroups; ++d)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          o[d][e] *= rescale[e >> 1];
      attention_values<kHeadDimTile, kMath, 0, Tile::kDimGroups>(sc, sv, g, t, o);
    }
  }
  cp_async_wait<0>();  // a block with no keys still committed its Q copy
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float scale = 1.0f;
    bool zero = false;
    if (softmax) {
      float sum = row_sum[r];
      sum += __shfl_xor_sync(0xffffffffu, sum, 1);
      sum += __shfl_xor_sync(0xffffffffu, sum, 2);
      zero = sum == 0.0f && s.empty_rows_zero;
      scale = 1.0f / sum;
    }
    const int64_t i = row[r];
    if (i >= s.queries) continue;
    float* out = p.out.data + b * p.out.stride[0] + h * p.out.stride[1] + i * p.out.stride[2];
#pragma unroll
    for (int d = 0; d < Tile::kDimGroups; ++d)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int col = 8 * d + 2 * t + c;
        if (col < s.value_dim) out[col * p.out.stride[3]] = zero ? 0.0f : o[d][2 * r + c] * scale;
      }
  }
#endif
}

template <int kHeadDimTile, AttentionMath kMath, class ScoreMod>
inline cudaError_t allow_attention_mma_smem() {
  return cudaFuncSetAttribute(attention_mma_kernel<kHeadDimTile, kMath, ScoreMod>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(AttentionMmaTile<kHeadDimTile, kMath>::kSmemBytes));
}

template <int kHeadDimTile, AttentionMath kMath, class ScoreMod>
inline cudaError_t launch_attention_mma(const AttentionMmaParams& params, const ScoreMod& mod,
                                        cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(params.base.tiles_m * params.base.shape.batch *
                                        params.base.shape.heads));
  attention_mma_kernel<kHeadDimTile, kMath, ScoreMod>
      <<<grid, kAttentionThreads, AttentionMmaTile<kHeadDimTile, kMath>::kSmemBytes, stream>>>(
          params, mod);
  return cudaGetLastError();
}

}  // namespace detail

// Whether an operand's rows can be copied 16 bytes at a time: columns contiguous, every row and
// (batch, head) start a multiple of 4 elements from a 16-byte aligned pointer, `cols` (the head or
// value dim) a multiple of 4. Pure: the kernels take 4-byte copies otherwise.
inline bool attention_vec4_rows(const AttentionOperand& operand, int64_t cols) {
  const auto four = [](int64_t x) { return x % 4 == 0; };
  return operand.stride[3] == 1 && four(operand.stride[0]) && four(operand.stride[1]) &&
         four(operand.stride[2]) && four(cols) &&
         reinterpret_cast<uintptr_t>(operand.data) % 16 == 0;
}

// Whether `math` names a variant (an int cast from a plan may not).
inline bool attention_math_known(AttentionMath math) {
  const int value = static_cast<int>(math);
  return value >= 0 && value < kAttentionMathCount;
}

// The variant's shared-memory limit (prepare_attention for fp32_fma); once per device before the
// first launch, outside any graph capture (a generated program calls it at init).
// cudaErrorInvalidValue for an unknown math.
template <int kHeadDimTile, class ScoreMod = AttentionScoreIdentity>
inline cudaError_t prepare_attention_math(AttentionMath math) {
  switch (math) {
    case AttentionMath::fp32_fma:
      return prepare_attention<kHeadDimTile, ScoreMod>();
    case AttentionMath::tf32x3:
      return detail::allow_attention_mma_smem<kHeadDimTile, AttentionMath::tf32x3, ScoreMod>();
    case AttentionMath::tf32:
      return detail::allow_attention_mma_smem<kHeadDimTile, AttentionMath::tf32, ScoreMod>();
    case AttentionMath::bf16:
      return detail::allow_attention_mma_smem<kHeadDimTile, AttentionMath::bf16, ScoreMod>();
  }
  return cudaErrorInvalidValue;
}

// launch_attention with the products in `math` (the file comment's variants; fp32_fma is
// launch_attention itself). Same arguments and contract; cudaErrorInvalidValue also for an unknown
// math. The tensor-core variants need sm_80 or later.
template <int kHeadDimTile, class ScoreMod = AttentionScoreIdentity>
inline int launch_attention_math(AttentionMath math, const AttentionShape& shape,
                                 const AttentionOperand& q, const AttentionOperand& k,
                                 const AttentionOperand& v, const AttentionOutput& out,
                                 const ScoreMod& mod, cudaStream_t stream) {
  if (!attention_math_known(math)) return cudaErrorInvalidValue;
  if (math == AttentionMath::fp32_fma)
    return launch_attention<kHeadDimTile>(shape, q, k, v, out, mod, stream);
  if (attention_shape_problem<kHeadDimTile>(shape)[0] != '\0') return cudaErrorInvalidValue;
  if (shape.batch == 0 || shape.queries == 0) return cudaSuccess;
  if (q.data == nullptr || k.data == nullptr || v.data == nullptr || out.data == nullptr)
    return cudaErrorInvalidValue;
  detail::AttentionMmaParams params;
  params.base.shape = shape, params.base.q = q, params.base.k = k, params.base.v = v;
  params.base.out = out;
  params.base.tiles_m = (shape.queries + kAttentionBlockM - 1) / kAttentionBlockM;
  params.q_vec4 = attention_vec4_rows(q, shape.head_dim);
  params.k_vec4 = attention_vec4_rows(k, shape.head_dim);
  params.v_vec4 = attention_vec4_rows(v, shape.value_dim);
  switch (math) {
    case AttentionMath::tf32x3:
      return detail::launch_attention_mma<kHeadDimTile, AttentionMath::tf32x3>(params, mod, stream);
    case AttentionMath::tf32:
      return detail::launch_attention_mma<kHeadDimTile, AttentionMath::tf32>(params, mod, stream);
    case AttentionMath::bf16:
      return detail::launch_attention_mma<kHeadDimTile, AttentionMath::bf16>(params, mod, stream);
    case AttentionMath::fp32_fma:
      break;
  }
  return cudaErrorInvalidValue;
}

// The same with out [batch, heads, queries, value_dim] contiguous.
template <int kHeadDimTile, class ScoreMod = AttentionScoreIdentity>
inline int launch_attention_math(AttentionMath math, const AttentionShape& shape,
                                 const AttentionOperand& q, const AttentionOperand& k,
                                 const AttentionOperand& v, float* out, const ScoreMod& mod,
                                 cudaStream_t stream) {
  return launch_attention_math<kHeadDimTile>(math, shape, q, k, v,
                                             contiguous_attention_output(out, shape), mod, stream);
}

}  // namespace stitch::kernels
