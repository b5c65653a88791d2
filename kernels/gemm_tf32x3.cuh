// Split-precision 3xTF32 GEMM in one kernel: FP32-accurate results from TF32 tensor cores
// (mma.sync m16n8k8, sm_80 and later), for the fp32 track's GEMMs where it beats Tf32x3Matmul.
//
// The same arithmetic as Tf32x3Matmul (matmul_tf32x3.cuh), without its split copies: every
// operand element x is split where it is used, in registers, after a cp.async pipeline has
// brought its tile into shared memory:
//   big = tf32(x) (round to nearest, ties away), small = tf32(x - big)
//   acc += small_a·big_b + big_a·small_b + big_a·big_b   (small_a·small_b is below FP32 rounding)
// so each operand is read once from memory (Tf32x3Matmul reads three split copies and writes them
// first), in one launch.
//
// Accumulation. A tensor core's FP32 accumulation truncates as it adds (matmul_tf32x3.cuh has the
// measurements), so its error grows with the number of products one accumulator takes. Here the
// tensor cores accumulate one K tile only (kGemmBK = 32 elements: 96 products of the three
// classes, smallest first); each tile's sum is then added to the running FP32 accumulator with
// round-to-nearest on the CUDA cores. (Tf32x3Matmul does the same per 3072 split elements.)
// Measured on an H200 against a double reference: relative error norm 1.2e-7 to 3.3e-7 on
// KernelBench level 2's GEMMs (Tf32x3Matmul 3.8e-6 to 5e-6, strict FP32 cuBLASLt 3e-7 to 3e-6),
// 2.2e-7 for same-signed operands at k = 8192 (Tf32x3Matmul 2.1e-5).
//
// Speed (H200, 2026-12-01; tests/kernels/gemm_tf32x3_bench.cu): about 51 TFLOP/s of FP32-accurate
// work on the large GEMMs, 31% of the 3xTF32 floor (3·2mnk at the dense TF32 peak) — as fast as
// strict FP32 cuBLASLt, half as fast as Tf32x3Matmul on prepared split copies (cuBLASLt's TF32
// kernels use Hopper's wgmma; mma.sync's TF32 rate on an H200 is about half of that: the same
// kernel without the split and with one mma per product ran at 98 TFLOP/s, with three at 171).
// It wins where Tf32x3Matmul must split a large B that is not a parameter on every call.
//
// Tiling: 128 x 128 output tiles, 8 warps of 64 x 32, K tiles of 32 in a 4-stage cp.async ring.
// Tiles are visited in groups of 8 tile rows (operands shared by neighbours stay in L2). When the
// tiles are fewer than the SMs, K is split across blocks: each writes its partial tile to a
// buffer, and the last block of a tile to finish (a ticket per tile) sums the partials in split
// order (deterministic) and applies the epilogue; it resets the ticket for the next launch.
//
// Operands: A row-major [m, k] (lda); B row-major [k, n] or transposed [n, k] (a weight: trans_b);
// strided batches (stride 0 broadcasts A or B). trans_a is not supported (Tf32x3Matmul is).
// Epilogue as LtMatmul: D = act(alpha·A·B + beta·C + bias), act none / ReLU / GELU (tanh form).
// 16-byte loads when the operands allow them (leading dimensions, strides, K and pointers
// multiples of 4 elements), 4-byte loads otherwise.
//
// Interface as Tf32x3Matmul (init → tune → [prepare_b] → run), so the emitter can swap one for
// the other: the cuBLASLt handle and workspace are accepted and unused, tune has nothing to time,
// prepare_b keeps the pointer. init allocates the split-K partials (never run: capturable).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "matmul.cuh"
#include "runtime.cuh"

namespace stitch::kernels {

namespace detail {

inline constexpr int kGemmBM = 128, kGemmBN = 128, kGemmBK = 32;
inline constexpr int kGemmStages = 4, kGemmThreads = 256, kGemmGroupM = 8;
inline constexpr int kGemmLdK = kGemmBK + 8;  // row length of a K-contiguous tile (A, [n,k] B)
inline constexpr int kGemmLdN = kGemmBN + 4;  // row length of an N-contiguous tile ([k,n] B)
inline constexpr int kGemmTileFloats = kGemmBM * kGemmLdK;
inline constexpr int kGemmStageFloats = 2 * kGemmTileFloats;
inline constexpr size_t kGemmSmemBytes = size_t{kGemmStages} * kGemmStageFloats * sizeof(float);
inline constexpr int kGemmAccPerThread = 64;  // 4 x 4 mma tiles of 4 values
inline constexpr int kGemmMaxSplits = 8;
static_assert(kGemmBK * kGemmLdN <= kGemmTileFloats, "a [k,n] B tile must fit a tile slot");

// How a problem is cut (pure: tested on the CPU).
struct GemmTf32x3Plan {
  int tiles_m = 0, tiles_n = 0;
  int splits = 1;     // blocks sharing one output tile along K
  int split_k = 0;    // K elements per split (a multiple of kGemmBK)
  int64_t tiles = 0;  // batch * tiles_m * tiles_n
  int64_t partial_floats() const {
    return splits > 1 ? tiles * splits * kGemmAccPerThread * kGemmThreads : 0;
  }
};

// Splits K when the tiles are fewer than the SMs: the split count whose waves of (shorter) blocks
// finish first, each split at least 8 K tiles, a split's reduction costed as 2 K tiles.
inline GemmTf32x3Plan plan_gemm_tf32x3(int64_t batch, int64_t m, int64_t n, int64_t k, int sms) {
  GemmTf32x3Plan p;
  p.tiles_m = static_cast<int>((m + kGemmBM - 1) / kGemmBM);
  p.tiles_n = static_cast<int>((n + kGemmBN - 1) / kGemmBN);
  p.tiles = batch * p.tiles_m * p.tiles_n;
  const int64_t k_tiles = (k + kGemmBK - 1) / kGemmBK;
  const int64_t slots = sms > 0 ? sms : 1;
  auto cost = [&](int64_t splits, int64_t per_split) {
    return (p.tiles * splits + slots - 1) / slots * per_split + (splits > 1 ? 2 : 0);
  };
  int64_t best_per_split = k_tiles, best_cost = cost(1, k_tiles);
  for (int64_t s = 2; p.tiles < slots && s <= kGemmMaxSplits && k_tiles >= 8 * s; ++s) {
    const int64_t per_split = (k_tiles + s - 1) / s;
    const int64_t c = cost((k_tiles + per_split - 1) / per_split, per_split);
    if (c < best_cost) {
      best_cost = c;
      best_per_split = per_split;
    }
  }
  p.split_k = static_cast<int>(best_per_split * kGemmBK);
  p.splits =
      static_cast<int>((k_tiles + best_per_split - 1) / std::max<int64_t>(best_per_split, 1));
  if (p.splits < 1) p.splits = 1;
  return p;
}

struct GemmTf32x3Args {
  const float* a = nullptr;
  const float* b = nullptr;
  const float* c = nullptr;
  float* d = nullptr;
  const float* bias = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  int m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0, stride_a = 0, stride_b = 0, stride_c = 0;
  int tiles_m = 0, tiles_n = 0, splits = 1, split_k = 0;
  MatmulEpilogue epilogue = MatmulEpilogue::none;
  bool accumulate = false;
  float* partials = nullptr;
  int* tickets = nullptr;
};

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 (or 4) bytes into shared memory; zeros when !valid (the source is then not read).
__device__ __forceinline__ void cp_async_16(float* dst, const float* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_4(float* dst, const float* src, bool valid) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_address(dst)), "l"(src),
               "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

// x rounded to TF32 as cvt.rna.tf32.f32 rounds (to nearest, ties away from zero), on the integer
// pipe: adding half a TF32 ulp to the bit pattern carries into the kept bits exactly when the
// dropped ones are at least half an ulp (|x| beyond the largest TF32 rounds to infinity, as with
// cvt.rna). With cvt.rna the kernel ran 13% slower on an H200.
__device__ __forceinline__ uint32_t round_tf32(float x) {
  return (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u;
}

// x = big + small, both TF32 bit patterns. An infinity goes to big whole (small = 0: inf - inf
// would be NaN); a NaN stays NaN in small.
__device__ __forceinline__ void split_tf32(float x, uint32_t& big, uint32_t& small) {
  big = round_tf32(x);
  const float b = __uint_as_float(big);
  small = round_tf32(x == b ? 0.0f : x - b);
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A tile of `rows` (<= 128) rows of K-contiguous source (row r at src + r·ld), K columns
// [k0, k_end) of the 32 from k0, into s[128][kGemmLdK]; zeros elsewhere.
template <bool kVec4>
__device__ __forceinline__ void load_k_contiguous(float* s, const float* src, int64_t ld, int rows,
                                                  int k0, int k_end, int tid) {
  if constexpr (kVec4) {
#pragma unroll
    for (int i = 0; i < kGemmBM * kGemmBK / 4 / kGemmThreads; ++i) {
      const int idx = tid + i * kGemmThreads, r = idx >> 3, c = (idx & 7) * 4;
      const bool ok = r < rows && k0 + c < k_end;
      cp_async_16(s + r * kGemmLdK + c, ok ? src + r * ld + k0 + c : src, ok);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kGemmBM * kGemmBK / kGemmThreads; ++i) {
      const int idx = tid + i * kGemmThreads, r = idx >> 5, c = idx & 31;
      const bool ok = r < rows && k0 + c < k_end;
      cp_async_4(s + r * kGemmLdK + c, ok ? src + r * ld + k0 + c : src, ok);
    }
  }
}

// K rows [k0, k_end) of the 32 from k0 of an N-contiguous source (row k at src + k·ld), `cols`
// (<= 128) columns, into s[32][kGemmLdN]; zeros elsewhere.
template <bool kVec4>
__device__ __forceinline__ void load_n_contiguous(float* s, const float* src, int64_t ld, int cols,
                                                  int k0, int k_end, int tid) {
  if constexpr (kVec4) {
#pragma unroll
    for (int i = 0; i < kGemmBK * kGemmBN / 4 / kGemmThreads; ++i) {
      const int idx = tid + i * kGemmThreads, r = idx >> 5, c = (idx & 31) * 4;
      const bool ok = k0 + r < k_end && c < cols;
      cp_async_16(s + r * kGemmLdN + c, ok ? src + (k0 + r) * ld + c : src, ok);
    }
  } else {
#pragma unroll
    for (int i = 0; i < kGemmBK * kGemmBN / kGemmThreads; ++i) {
      const int idx = tid + i * kGemmThreads, r = idx >> 7, c = idx & 127;
      const bool ok = k0 + r < k_end && c < cols;
      cp_async_4(s + r * kGemmLdN + c, ok ? src + (k0 + r) * ld + c : src, ok);
    }
  }
}

// One K tile's products into `part`. The mma's K slots are fed a permutation of the tile's
// columns, the same for A and B (slot t <- column 2t, slot t + 4 <- column 2t + 1 of each group
// of 8), so a thread's two K values are adjacent: one 8-byte shared load.
template <bool kTransB>
__device__ __forceinline__ void multiply_tile(const float* sa, const float* sb, int wm, int wn,
                                              int g, int t, float (&part)[4][4][4]) {
#pragma unroll
  for (int kk = 0; kk < kGemmBK / 8; ++kk) {
    uint32_t a_big[4][4], a_small[4][4], b_big[4][2], b_small[4][2];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float* row = sa + (wm * 64 + i * 16 + g) * kGemmLdK + kk * 8 + 2 * t;
      const float2 top = *reinterpret_cast<const float2*>(row);
      const float2 bottom = *reinterpret_cast<const float2*>(row + 8 * kGemmLdK);
      split_tf32(top.x, a_big[i][0], a_small[i][0]);
      split_tf32(bottom.x, a_big[i][1], a_small[i][1]);
      split_tf32(top.y, a_big[i][2], a_small[i][2]);
      split_tf32(bottom.y, a_big[i][3], a_small[i][3]);
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int col = wn * 32 + j * 8 + g;
      float lo, hi;
      if constexpr (kTransB) {
        const float2 v = *reinterpret_cast<const float2*>(sb + col * kGemmLdK + kk * 8 + 2 * t);
        lo = v.x;
        hi = v.y;
      } else {
        lo = sb[(kk * 8 + 2 * t) * kGemmLdN + col];
        hi = sb[(kk * 8 + 2 * t + 1) * kGemmLdN + col];
      }
      split_tf32(lo, b_big[j][0], b_small[j][0]);
      split_tf32(hi, b_big[j][1], b_small[j][1]);
    }
    // Smallest products first; 16 independent accumulators between dependent mmas.
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        mma_tf32(part[i][j], a_small[i], b_big[j]);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        mma_tf32(part[i][j], a_big[i], b_small[j]);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
        mma_tf32(part[i][j], a_big[i], b_big[j]);
  }
}

__device__ __forceinline__ float gemm_activation(float v, MatmulEpilogue e) {
  if (e == MatmulEpilogue::relu || e == MatmulEpilogue::bias_relu) return fmaxf(v, 0.0f);
  if (e == MatmulEpilogue::gelu || e == MatmulEpilogue::bias_gelu)
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  return v;
}

// Split K: stores this block's partial tile; true for the block that finishes the tile, whose
// `acc` then holds the sum of every split in split order.
__device__ __forceinline__ bool reduce_splits(const GemmTf32x3Args& p, int64_t tile, int split,
                                              float (&acc)[4][4][4]) {
  __shared__ int last;
  const int tid = threadIdx.x;
  float* mine = p.partials + (tile * p.splits + split) * kGemmAccPerThread * kGemmThreads;
#pragma unroll
  for (int e = 0; e < kGemmAccPerThread; ++e)
    __stcg(mine + e * kGemmThreads + tid, acc[e / 16][(e / 4) % 4][e % 4]);
  __threadfence();
  __syncthreads();
  if (tid == 0) last = atomicAdd(p.tickets + tile, 1) == p.splits - 1;
  __syncthreads();
  if (!last) return false;
  __threadfence();
  const float* first = p.partials + tile * p.splits * kGemmAccPerThread * kGemmThreads;
#pragma unroll
  for (int e = 0; e < kGemmAccPerThread; ++e) {
    float sum = 0.0f;
    for (int s = 0; s < p.splits; ++s)
      sum += s == split ? acc[e / 16][(e / 4) % 4][e % 4]
                        : __ldcg(first + (s * kGemmAccPerThread + e) * kGemmThreads + tid);
    acc[e / 16][(e / 4) % 4][e % 4] = sum;
  }
  if (tid == 0) p.tickets[tile] = 0;  // ready for the next launch
  return true;
}

template <bool kTransB, bool kVec4>
__global__ void __launch_bounds__(kGemmThreads, 1) gemm_tf32x3_kernel(GemmTf32x3Args p) {
  extern __shared__ float4 gemm_smem[];
  float* smem = reinterpret_cast<float*>(gemm_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, wm = warp >> 2, wn = warp & 3;
  // Grouped order: kGemmGroupM tile rows advance together across the tile columns.
  const int group = kGemmGroupM * p.tiles_n, first_m = blockIdx.x / group * kGemmGroupM;
  const int group_m = min(p.tiles_m - first_m, kGemmGroupM), in_group = blockIdx.x % group;
  const int tm = first_m + in_group % group_m, tn = in_group / group_m;
  const int batch = blockIdx.y / p.splits, split = blockIdx.y % p.splits;
  const int m0 = tm * kGemmBM, n0 = tn * kGemmBN;
  const int k_begin = split * p.split_k, k_end = min(p.k, k_begin + p.split_k);
  const float* a = p.a + batch * p.stride_a + int64_t{m0} * p.lda;
  const float* b = p.b + batch * p.stride_b + (kTransB ? int64_t{n0} * p.ldb : n0);
  const int rows_a = min(kGemmBM, p.m - m0), cols_b = min(kGemmBN, p.n - n0);
  const int k_tiles = (k_end - k_begin + kGemmBK - 1) / kGemmBK;

  auto load = [&](int kt) {
    float* stage = smem + (kt % kGemmStages) * kGemmStageFloats;
    const int k0 = k_begin + kt * kGemmBK;
    load_k_contiguous<kVec4>(stage, a, p.lda, rows_a, k0, k_end, tid);
    if constexpr (kTransB)
      load_k_contiguous<kVec4>(stage + kGemmTileFloats, b, p.ldb, cols_b, k0, k_end, tid);
    else
      load_n_contiguous<kVec4>(stage + kGemmTileFloats, b, p.ldb, cols_b, k0, k_end, tid);
  };
#pragma unroll
  for (int s = 0; s < kGemmStages - 1; ++s) {
    if (s < k_tiles) load(s);
    cp_async_commit();
  }
  float acc[4][4][4] = {}, part[4][4][4] = {};
  for (int kt = 0; kt < k_tiles; ++kt) {
    cp_async_wait<kGemmStages - 2>();
    __syncthreads();  // tile kt landed for every thread; tile kt - 1's slot is free
    if (kt + kGemmStages - 1 < k_tiles) load(kt + kGemmStages - 1);
    cp_async_commit();
    const float* stage = smem + (kt % kGemmStages) * kGemmStageFloats;
    multiply_tile<kTransB>(stage, stage + kGemmTileFloats, wm, wn, g, t, part);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          acc[i][j][r] += part[i][j][r];  // round to nearest, on the CUDA cores
          part[i][j][r] = 0.0f;
        }
  }
  cp_async_wait<0>();
  if (p.splits > 1) {
    const int64_t tile = (int64_t{batch} * p.tiles_m + tm) * p.tiles_n + tn;
    if (!reduce_splits(p, tile, split, acc)) return;
  }
  const float* c = p.c + batch * p.stride_c;
  float* d = p.d + batch * p.stride_c;
  const bool bias = p.epilogue == MatmulEpilogue::bias || p.epilogue == MatmulEpilogue::bias_relu ||
                    p.epilogue == MatmulEpilogue::bias_gelu;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int row = m0 + wm * 64 + i * 16 + g + (r >> 1) * 8;
        const int col = n0 + wn * 32 + j * 8 + 2 * t + (r & 1);
        if (row >= p.m || col >= p.n) continue;
        const int64_t at = int64_t{row} * p.ldc + col;
        float v = p.alpha * acc[i][j][r];
        if (p.accumulate) v += p.beta * c[at];
        if (bias) v += p.bias[col];
        d[at] = gemm_activation(v, p.epilogue);
      }
}

template <bool kTransB, bool kVec4>
inline cudaError_t allow_gemm_tf32x3_smem() {
  return cudaFuncSetAttribute(gemm_tf32x3_kernel<kTransB, kVec4>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(kGemmSmemBytes));
}

}  // namespace detail

class GemmTf32x3 {
 public:
  GemmTf32x3() = default;
  ~GemmTf32x3() { release(); }
  GemmTf32x3(const GemmTf32x3&) = delete;
  GemmTf32x3& operator=(const GemmTf32x3&) = delete;

  // As Tf32x3Matmul::init (shape, epilogue, accumulate_c contract; handle and workspace unused).
  // trans_a is rejected. alignment_bytes: unused (the kernel checks each run's pointers and takes
  // 16-byte loads when they allow).
  int init(cublasLtHandle_t handle, const MatmulShape& requested, MatmulEpilogue epilogue,
           bool accumulate_c, void* workspace, size_t workspace_bytes, std::string& error,
           int alignment_bytes = 16) {
    (void)handle, (void)workspace, (void)workspace_bytes, (void)alignment_bytes;
    release();
    const MatmulShape s = detail::fold_shared_b(requested);
    detail::LtProblem checked;
    std::string bad = detail::lt_problem(s, checked);
    if (bad.empty() && s.k == 0) bad = "k == 0";
    if (bad.empty() && s.trans_a) bad = "trans_a is not supported (Tf32x3Matmul is)";
    if (bad.empty() && (s.m > INT32_MAX || s.n > INT32_MAX || s.k > INT32_MAX))
      bad = "m, n or k does not fit int32";
    if (!bad.empty()) {
      error = "GemmTf32x3::init: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    shape_ = s;
    epilogue_ = epilogue;
    accumulate_c_ = accumulate_c;
    int device = 0, sms = 0;
    STITCH_CHECK_CUDA(cudaGetDevice(&device));
    STITCH_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    plan_ = detail::plan_gemm_tf32x3(s.batch, s.m, s.n, s.k, sms);
    if (plan_.tiles_m * int64_t{plan_.tiles_n} > INT32_MAX || s.batch * plan_.splits > 65535) {
      error = "GemmTf32x3::init: too many tiles or batches for one launch";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    STITCH_CHECK_CUDA((detail::allow_gemm_tf32x3_smem<false, false>()));
    STITCH_CHECK_CUDA((detail::allow_gemm_tf32x3_smem<false, true>()));
    STITCH_CHECK_CUDA((detail::allow_gemm_tf32x3_smem<true, false>()));
    STITCH_CHECK_CUDA((detail::allow_gemm_tf32x3_smem<true, true>()));
    if (plan_.splits > 1) {
      const size_t partial_bytes = static_cast<size_t>(plan_.partial_floats()) * sizeof(float);
      const size_t ticket_bytes = static_cast<size_t>(plan_.tiles) * sizeof(int);
      STITCH_CHECK_CUDA(cudaMalloc(&partials_, partial_bytes + ticket_bytes));
      tickets_ = reinterpret_cast<int*>(static_cast<char*>(partials_) + partial_bytes);
      STITCH_CHECK_CUDA(cudaMemset(tickets_, 0, ticket_bytes));
    }
    ready_ = true;
    return STITCH_OK;
  }

  // B is a parameter: run() may then take b == nullptr (nothing to split: the kernel splits tiles).
  int prepare_b(const float* b, cudaStream_t stream, std::string& error) {
    (void)stream;
    if (!ready_) {
      error = "GemmTf32x3::prepare_b before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    prepared_b_ = b;
    return STITCH_OK;
  }

  // One kernel, no candidates: nothing to time.
  int tune(const float*, const float*, float*, const float*, cudaStream_t, std::string&, int = 5) {
    return STITCH_OK;
  }

  // As LtMatmul::run; b may be nullptr after prepare_b. Capturable (no allocation or sync).
  int run(const float* a, const float* b, const float* c_in, float* d, const float* bias,
          float alpha, float beta, cudaStream_t stream, std::string& error) const {
    if (!ready_) {
      error = "GemmTf32x3::run before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (b == nullptr) b = prepared_b_;
    std::string bad;
    if (a == nullptr || b == nullptr || d == nullptr) bad = "null matrix pointer";
    if (!accumulate_c_ && beta != 0.0f) bad = "beta != 0 but init was told accumulate_c = false";
    if (accumulate_c_ && c_in == nullptr) bad = "accumulate_c needs c_in";
    if (epilogue_has_bias(epilogue_) && bias == nullptr) bad = "the bias epilogue needs a bias";
    if (!bad.empty()) {
      error = "GemmTf32x3::run: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (shape_.m == 0 || shape_.n == 0) return STITCH_OK;
    detail::GemmTf32x3Args p;
    p.a = a, p.b = b, p.c = c_in, p.d = d, p.bias = bias, p.alpha = alpha, p.beta = beta;
    p.m = static_cast<int>(shape_.m), p.n = static_cast<int>(shape_.n);
    p.k = static_cast<int>(shape_.k);
    p.lda = shape_.lda, p.ldb = shape_.ldb, p.ldc = shape_.ldc;
    p.stride_a = shape_.stride_a, p.stride_b = shape_.stride_b, p.stride_c = shape_.stride_c;
    p.tiles_m = plan_.tiles_m, p.tiles_n = plan_.tiles_n;
    p.splits = plan_.splits, p.split_k = plan_.split_k;
    p.epilogue = epilogue_, p.accumulate = accumulate_c_;
    p.partials = static_cast<float*>(partials_), p.tickets = tickets_;
    const dim3 grid(static_cast<unsigned>(plan_.tiles_m * plan_.tiles_n),
                    static_cast<unsigned>(shape_.batch * plan_.splits));
    const bool vec4 = vector_loads(a, b);
    const size_t smem = detail::kGemmSmemBytes;
    if (shape_.trans_b) {
      if (vec4)
        detail::gemm_tf32x3_kernel<true, true><<<grid, detail::kGemmThreads, smem, stream>>>(p);
      else
        detail::gemm_tf32x3_kernel<true, false><<<grid, detail::kGemmThreads, smem, stream>>>(p);
    } else {
      if (vec4)
        detail::gemm_tf32x3_kernel<false, true><<<grid, detail::kGemmThreads, smem, stream>>>(p);
      else
        detail::gemm_tf32x3_kernel<false, false><<<grid, detail::kGemmThreads, smem, stream>>>(p);
    }
    STITCH_CHECK_CUDA(cudaGetLastError());
    return STITCH_OK;
  }

  std::string describe() const {
    if (!ready_) return "not initialised";
    std::string out = "3xTF32 split precision, one mma.sync kernel, 128x128 tiles";
    if (plan_.splits > 1)
      out += ", K split " + std::to_string(plan_.splits) + " ways (" +
             std::to_string(plan_.split_k) + " each)";
    return out;
  }
  int splits() const { return plan_.splits; }

 private:
  // 16-byte loads: every row start and batch start of A and B a multiple of 4 elements from a
  // 16-byte aligned pointer, and the contiguous extent (K, or n for a [k,n] B) a multiple of 4.
  bool vector_loads(const float* a, const float* b) const {
    auto four = [](int64_t v) { return v % 4 == 0; };
    const bool shape_ok = four(shape_.k) && four(shape_.lda) && four(shape_.ldb) &&
                          four(shape_.stride_a) && four(shape_.stride_b) &&
                          (shape_.trans_b || four(shape_.n));
    return shape_ok && detail::is_aligned(a, 16) && detail::is_aligned(b, 16);
  }

  void release() {
    if (partials_ != nullptr) cudaFree(partials_);
    partials_ = nullptr;
    tickets_ = nullptr;
    prepared_b_ = nullptr;
    ready_ = false;
  }

  MatmulShape shape_;
  MatmulEpilogue epilogue_ = MatmulEpilogue::none;
  bool accumulate_c_ = false;
  detail::GemmTf32x3Plan plan_;
  void* partials_ = nullptr;  // split-K partial tiles, then one ticket per tile
  int* tickets_ = nullptr;
  const float* prepared_b_ = nullptr;
  bool ready_ = false;
};

}  // namespace stitch::kernels
