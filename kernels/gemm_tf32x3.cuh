// Split-precision 3xTF32 GEMM in one kernel: FP32-accurate results from TF32 tensor cores,
// for the fp32 track's GEMMs. Two kernels behind one class, GemmTf32x3: on a compute capability
// 9.0 GPU with the program built for sm_90a, the wgmma kernel of gemm_tf32x3_wgmma.cuh; elsewhere
// (sm_80, sm_100, sm_90 without the 'a' target) the mma.sync m16n8k8 kernel of this file. Both
// share the tile, the split-K plan and the epilogue (gemm_tf32x3_common.cuh).
//
// The same arithmetic as Tf32x3Matmul (matmul_tf32x3.cuh), without most of its split copies:
// every element x of A (and, in the mma.sync kernel, of B) is split where it is used, after its
// tile has been brought into shared memory:
//   big = tf32(x) (round to nearest, ties away), small = tf32(x - big)
//   acc += small_a·big_b + big_a·small_b + big_a·big_b   (small_a·small_b is below FP32 rounding)
// so A is read once from memory, in one launch (Tf32x3Matmul reads three split copies and writes
// them first). The wgmma kernel reads B as two split copies of its own layout, made once at init
// for a parameter (gemm_tf32x3_wgmma.cuh says why).
//
// Accumulation. A tensor core's FP32 accumulation truncates as it adds (matmul_tf32x3.cuh has the
// measurements), so its error grows with the number of products one accumulator takes. Here the
// tensor cores accumulate one K tile only (kGemmBK = 32 elements: 96 products of the three
// classes, smallest first); each tile's sum is then added to the running FP32 accumulator with
// round-to-nearest on the CUDA cores. (Tf32x3Matmul does the same per 3072 split elements.)
// Measured on an H200 against a double reference (mma.sync kernel): relative error norm 1.2e-7
// to 3.3e-7 on KernelBench level 2's GEMMs (Tf32x3Matmul 3.8e-6 to 5e-6, strict FP32 cuBLASLt
// 3e-7 to 3e-6), 2.2e-7 for same-signed operands at k = 8192 (Tf32x3Matmul 2.1e-5).
//
// Speed of the mma.sync kernel (H200, 2026-12-01; tests/kernels/gemm_tf32x3_bench.cu): about 51
// TFLOP/s of FP32-accurate work on the large GEMMs, 31% of the 3xTF32 floor (3·2mnk at the dense
// TF32 peak) — as fast as strict FP32 cuBLASLt, half as fast as Tf32x3Matmul on prepared split
// copies (cuBLASLt's TF32 kernels use Hopper's wgmma; mma.sync's TF32 rate on an H200 is about half
// of that: the same kernel without the split and with one mma per product ran at 98 TFLOP/s, with
// three at 171). It wins where Tf32x3Matmul must split a large B that is not a parameter on every
// call.
//
// Tiling (mma.sync): 128 x 128 output tiles, 8 warps of 64 x 32, K tiles of 32 in a 4-stage
// cp.async ring. Tiles are visited in groups of 8 tile rows (operands shared by neighbours stay in
// L2). When the tiles are fewer than the SMs, K is split across blocks: each writes its partial
// tile to a buffer, and the last block of a tile to finish (a ticket per tile) sums the partials in
// split order (deterministic) and applies the epilogue; it resets the ticket for the next launch.
//
// Operands: A row-major [m, k] (lda); B row-major [k, n] or transposed [n, k] (a weight: trans_b);
// strided batches (stride 0 broadcasts A or B). trans_a is not supported (Tf32x3Matmul is).
// Epilogue as LtMatmul: D = act(alpha·A·B + beta·C + bias), act none / ReLU / GELU (tanh form).
// 16-byte loads when the operands allow them (leading dimensions, strides, K and pointers
// multiples of 4 elements), 4-byte loads otherwise.
//
// Interface as Tf32x3Matmul (init → tune → [prepare_b] → run), so the emitter can swap one for
// the other: the cuBLASLt handle and workspace are accepted and unused, tune has nothing to time,
// prepare_b splits a parameter B once for the wgmma kernel (which reads split copies of B, made per
// run when B is not prepared) and keeps the pointer for mma.sync. init picks the kernel (one probe
// launch: gemm_tf32x3_common.cuh) and allocates the split-K partials and the wgmma kernel's split
// copies of B (twice B's size); run allocates and synchronises nothing (capturable).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "gemm_tf32x3_common.cuh"
#include "gemm_tf32x3_wgmma.cuh"
#include "matmul.cuh"
#include "runtime.cuh"

namespace stitch::kernels {

namespace detail {

inline constexpr int kGemmStages = 4;
inline constexpr int kGemmLdK = kGemmBK + 8;  // row length of a K-contiguous tile (A, [n,k] B)
inline constexpr int kGemmLdN = kGemmBN + 4;  // row length of an N-contiguous tile ([k,n] B)
inline constexpr int kGemmTileFloats = kGemmBM * kGemmLdK;
inline constexpr int kGemmStageFloats = 2 * kGemmTileFloats;
inline constexpr size_t kGemmSmemBytes = size_t{kGemmStages} * kGemmStageFloats * sizeof(float);
static_assert(kGemmBK * kGemmLdN <= kGemmTileFloats, "a [k,n] B tile must fit a tile slot");

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

// The pipelined main loop over `k_tiles` tiles of kGemmBK: `load(kt)` issues tile kt's cp.async
// copies into its stage, kGemmStages - 1 tiles ahead; each tile's 3xTF32 products (multiply_tile)
// are summed into `acc` in FP32 on the CUDA cores, so accumulation across tiles stays exact to
// FP32 rounding. Returns with every copy landed. The GEMM and the implicit-GEMM convolution
// (conv_igemm_tf32x3.cuh) share it; they differ only in how a tile is loaded.
template <bool kTransB, typename Load>
__device__ __forceinline__ void multiply_tiles(const float* smem, int k_tiles, Load& load, int wm,
                                               int wn, int g, int t, float (&acc)[4][4][4]) {
#pragma unroll
  for (int s = 0; s < kGemmStages - 1; ++s) {
    if (s < k_tiles) load(s);
    cp_async_commit();
  }
  float part[4][4][4] = {};
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
}

template <bool kTransB, bool kVec4>
__global__ void __launch_bounds__(kGemmThreads, 1) gemm_tf32x3_kernel(GemmTf32x3Args p) {
#if defined(STITCH_GEMM_MMA_SYNC)
  extern __shared__ float4 gemm_smem[];
  float* smem = reinterpret_cast<float*>(gemm_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, wm = warp >> 2, wn = warp & 3;
  const auto [tm, tn, batch, split] = gemm_tile_coord(p);
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
  float acc[4][4][4] = {};
  multiply_tiles<kTransB>(smem, k_tiles, load, wm, wn, g, t, acc);
  if (p.splits > 1) {
    const int64_t tile = (int64_t{batch} * p.tiles_m + tm) * p.tiles_n + tn;
    if (!reduce_splits(p, tile, split,
                       [&](int e) -> float& { return acc[e / 16][(e / 4) % 4][e % 4]; }))
      return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r)
        store_gemm_output(p, batch, m0 + wm * 64 + i * 16 + g + (r >> 1) * 8,
                          n0 + wn * 32 + j * 8 + 2 * t + (r & 1), acc[i][j][r]);
#else
  (void)p;
#endif
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

  // The kernel (Tf32x3Engine: wgmma, gemm_tf32x3_wgmma.cuh, where built; else mma.sync). Set
  // before init.
  using Engine = Tf32x3Engine;
  void set_engine(Engine engine) { requested_engine_ = engine; }
  // The wgmma kernel's K tiles per tensor-core chunk sum (accuracy against overlap; the bench
  // compares). Set before run.
  void set_chunk_tiles(int tiles) { chunk_tiles_ = tiles < 1 ? 1 : tiles; }
  bool uses_wgmma() const { return wgmma_; }

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
    sms_ = sms;
    if (plan_.tiles * plan_.splits > INT32_MAX || s.batch * plan_.splits > 65535) {
      error = "GemmTf32x3::init: too many tiles or batches for one launch";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    STITCH_CHECK(choose_engine(error));
    if (wgmma_)
      STITCH_CHECK(split_b_.init(s.stride_b == 0 ? 1 : s.batch, s.n, s.k, error));
    STITCH_CHECK(split_k_.init(plan_, error));
    ready_ = true;
    return STITCH_OK;
  }

  // B is a parameter: run() may then take b == nullptr. The wgmma kernel's split copies of B are
  // made here once (a kernel on `stream`); the mma.sync kernel splits its tiles itself and keeps
  // the pointer.
  int prepare_b(const float* b, cudaStream_t stream, std::string& error) {
    if (!ready_) {
      error = "GemmTf32x3::prepare_b before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (b == nullptr) {
      error = "GemmTf32x3::prepare_b: null B";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (wgmma_) STITCH_CHECK(split_b(b, stream, error));
    prepared_b_ = b;
    return STITCH_OK;
  }

  // One kernel, no candidates: nothing to time.
  int tune(const float*, const float*, float*, const float*, cudaStream_t, std::string&, int = 5) {
    return STITCH_OK;
  }

  // As LtMatmul::run; b may be nullptr after prepare_b (a B given here is split again first, on
  // the wgmma kernel's path). Capturable (no allocation or sync).
  int run(const float* a, const float* b, const float* c_in, float* d, const float* bias,
          float alpha, float beta, cudaStream_t stream, std::string& error) const {
    if (!ready_) {
      error = "GemmTf32x3::run before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    const bool given_b = b != nullptr;
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
    p.partials = split_k_.partials(), p.tickets = split_k_.tickets();
    const dim3 grid(static_cast<unsigned>(plan_.tiles_m * plan_.tiles_n),
                    static_cast<unsigned>(shape_.batch * plan_.splits));
    p.trans_b = shape_.trans_b, p.vec4 = vector_loads(a, b);
    p.chunk_tiles = chunk_tiles_;  // >= 1: set_chunk_tiles clamps
    if (wgmma_) {
      if (given_b) STITCH_CHECK(split_b(b, stream, error));
      p.units = static_cast<int>(plan_.tiles * plan_.splits);  // init checked it fits
      p.pair_stores = detail::is_aligned(d, 8) && shape_.ldc % 2 == 0 && shape_.n % 2 == 0 &&
                      (shape_.batch == 1 || shape_.stride_c % 2 == 0);
      const auto blocks = static_cast<unsigned>(std::min(p.units, sms_));
      detail::gemm_tf32x3_wgmma_kernel<>
          <<<blocks, detail::kWgmmaThreads, detail::WgmmaTile<detail::kGemmBN>::kSmemBytes,
             stream>>>(p, split_b_.maps());
    } else if (p.trans_b)
      launch_mma_sync<true>(p, grid, stream);
    else
      launch_mma_sync<false>(p, grid, stream);
    STITCH_CHECK_CUDA(cudaGetLastError());
    return STITCH_OK;
  }

  std::string describe() const {
    if (!ready_) return "not initialised";
    std::string out = std::string("3xTF32 split precision, one ") +
                      (wgmma_ ? "wgmma + TMA (sm_90a)" : "mma.sync") + " kernel, 128x128 tiles";
    if (plan_.splits > 1)
      out += ", K split " + std::to_string(plan_.splits) + " ways (" +
             std::to_string(plan_.split_k) + " each)";
    return out;
  }
  int splits() const { return plan_.splits; }

 private:
  int choose_engine(std::string& error) {
    STITCH_CHECK(choose_tf32x3_engine(requested_engine_, "GemmTf32x3::init", wgmma_, error));
    if (wgmma_) {
      STITCH_CHECK_CUDA(detail::allow_gemm_tf32x3_wgmma_smem());
    } else {
      STITCH_CHECK_CUDA((detail::allow_gemm_tf32x3_smem<false, false>()));
      STITCH_CHECK_CUDA((detail::allow_gemm_tf32x3_smem<false, true>()));
      STITCH_CHECK_CUDA((detail::allow_gemm_tf32x3_smem<true, false>()));
      STITCH_CHECK_CUDA((detail::allow_gemm_tf32x3_smem<true, true>()));
    }
    return STITCH_OK;
  }

  int split_b(const float* b, cudaStream_t stream, std::string& error) const {
    return split_b_.split(b, shape_.ldb, shape_.stride_b, shape_.trans_b, stream, error);
  }

  template <bool kTransB>
  static void launch_mma_sync(const detail::GemmTf32x3Args& p, dim3 grid, cudaStream_t stream) {
    const size_t smem = detail::kGemmSmemBytes;
    if (p.vec4)
      detail::gemm_tf32x3_kernel<kTransB, true><<<grid, detail::kGemmThreads, smem, stream>>>(p);
    else
      detail::gemm_tf32x3_kernel<kTransB, false><<<grid, detail::kGemmThreads, smem, stream>>>(p);
  }

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
    split_k_.release();
    prepared_b_ = nullptr;
    ready_ = false;
  }

  MatmulShape shape_;
  MatmulEpilogue epilogue_ = MatmulEpilogue::none;
  bool accumulate_c_ = false;
  detail::GemmTf32x3Plan plan_;
  SplitKScratch split_k_;
  const float* prepared_b_ = nullptr;
  WgmmaSplitB split_b_;  // the wgmma kernel's split copies of B
  Engine requested_engine_ = Engine::automatic;
  int chunk_tiles_ = detail::kWgmmaChunkTiles;
  int sms_ = 1;  // the persistent wgmma kernel's blocks
  bool wgmma_ = false;
  bool ready_ = false;
};

}  // namespace stitch::kernels
