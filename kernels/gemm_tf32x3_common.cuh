// What the two 3xTF32 GEMM kernels share (gemm_tf32x3.cuh: mma.sync, sm_80 and later;
// gemm_tf32x3_wgmma.cuh: wgmma, sm_90a): the 128 x 128 output tile and its 256 threads' 64
// accumulators, the split-K plan and its deterministic reduction, the kernel arguments, cp.async,
// the TF32 split, the m16n8k8 TF32 mma, and the epilogue. GemmTf32x3 (gemm_tf32x3.cuh) picks the
// kernel per device. The fused attention's tensor-core kernels (attention_mma.cuh) use the
// cp.async, split and mma helpers too.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "matmul.cuh"
#include "runtime.cuh"

// Which kernel bodies this compilation pass builds. sm_90a code runs the wgmma kernel, so there
// the mma.sync kernel is left empty (a program's sm_90a build takes a minute less) unless
// STITCH_GEMM_TF32X3_MMA_SYNC_ON_SM90A asks for both (the tests and the bench compare them).
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define STITCH_GEMM_WGMMA 1
#endif
#if defined(__CUDA_ARCH__) && \
    (!defined(STITCH_GEMM_WGMMA) || defined(STITCH_GEMM_TF32X3_MMA_SYNC_ON_SM90A))
#define STITCH_GEMM_MMA_SYNC 1
#endif

namespace stitch::kernels {

namespace detail {

inline constexpr int kGemmBM = 128, kGemmBN = 128, kGemmBK = 32;
inline constexpr int kGemmThreads = 256, kGemmGroupM = 8;
inline constexpr int kGemmAccPerThread = 64;  // a 128 x 128 tile over 256 threads
inline constexpr int kGemmMaxSplits = 8;
// The wgmma kernel's default K tiles per tensor-core chunk sum (gemm_tf32x3_wgmma.cuh says why 4).
inline constexpr int kWgmmaChunkTiles = 4;

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

// Splits K when the tiles (128 x tile_n) are fewer than the SMs: the split count whose waves of
// (shorter) blocks finish first, each split at least 8 K tiles, a split's reduction costed as 2 K
// tiles.
inline GemmTf32x3Plan plan_gemm_tf32x3(int64_t batch, int64_t m, int64_t n, int64_t k, int sms,
                                       int64_t tile_n = kGemmBN) {
  GemmTf32x3Plan p;
  p.tiles_m = static_cast<int>((m + kGemmBM - 1) / kGemmBM);
  p.tiles_n = static_cast<int>((n + tile_n - 1) / tile_n);
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
  bool trans_b = false, vec4 = false;  // read by the wgmma kernel (template flags of mma.sync's)
  int chunk_tiles = kWgmmaChunkTiles;  // wgmma kernel: K tiles per tensor-core chunk sum, >= 1
  // The persistent wgmma GEMM kernel: output tiles x batches x splits, which its blocks share.
  int units = 0;
  // The wgmma kernel: D's rows and batches start 8 bytes aligned and n is even, so two adjacent
  // columns of a row go out in one store (store_gemm_tile).
  bool pair_stores = false;
  float* partials = nullptr;
  int* tickets = nullptr;
};

__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 (or 4) bytes into shared memory; zeros when !valid (the source is then not read).
__device__ __forceinline__ void cp_async_16(float* dst, const float* src, bool valid) {
  asm volatile(
      "{\n"
      ".reg .pred ignore;\n"
      "setp.eq.u32 ignore, %2, 0;\n"
      "cp.async.cg.shared.global [%0], [%1], 16, ignore;\n"
      "}\n" ::"r"(smem_address(dst)),
      "l"(src), "r"(static_cast<unsigned>(valid)));
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

// split_tf32 for an operand that goes straight into the tensor cores: small is x - big as it is,
// an FP32 pattern whose low 13 bits the tensor cores drop (a TF32 operand is its top 19 bits), so
// it is truncated there instead of rounded here. Two of split_tf32's seven instructions fewer,
// for a truncation error in small of at most 2^-21 |x| (rounded: 2^-22 |x|), the size of the
// small · small product 3xTF32 leaves out. The wgmma consumers split 16 values per K tile this way.
__device__ __forceinline__ void split_tf32_for_mma(float x, uint32_t& big, uint32_t& small) {
  big = round_tf32(x);
  const float b = __uint_as_float(big);
  small = __float_as_uint(x == b ? 0.0f : x - b);
}

// c += a·b on the tensor cores, m16n8k8 TF32 (sm_80 and later): a 16 x 8 row-major A, an 8 x 8
// column-major B, FP32 accumulators; the fragments' layout is PTX's (attention_mma.cuh spells it
// out).
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// The epilogue's activations (its bias aside), each a type: with_gemm_activation(e, f) calls f
// with the one `e` applies, so that a loop over many outputs within f tests `e` once, not per
// output.
struct NoGemmActivation {
  __host__ __device__ float operator()(float v) const { return v; }
};
struct ReluGemmActivation {
  __host__ __device__ float operator()(float v) const { return fmaxf(v, 0.0f); }
};
struct GeluGemmActivation {  // the tanh approximation, as cuBLASLt's
  __host__ __device__ float operator()(float v) const {
    return 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
};

template <class F>
__host__ __device__ __forceinline__ void with_gemm_activation(MatmulEpilogue e, F&& f) {
  if (e == MatmulEpilogue::relu || e == MatmulEpilogue::bias_relu)
    f(ReluGemmActivation{});
  else if (e == MatmulEpilogue::gelu || e == MatmulEpilogue::bias_gelu)
    f(GeluGemmActivation{});
  else
    f(NoGemmActivation{});
}

__host__ __device__ __forceinline__ float gemm_activation(float v, MatmulEpilogue e) {
  if (e == MatmulEpilogue::relu || e == MatmulEpilogue::bias_relu) return ReluGemmActivation{}(v);
  if (e == MatmulEpilogue::gelu || e == MatmulEpilogue::bias_gelu) return GeluGemmActivation{}(v);
  return v;
}

// Split K: stores this block's partial tile; true for the block that finishes the tile, whose
// accumulators then hold the sum of every split in split order. `at(e)` is the thread's
// accumulator e (0 .. kAcc - 1), the same element of the tile in every split (kAcc < 64: a
// narrower tile, stored in the first kAcc of each thread's 64 slots). `sync` is a barrier over
// the kGemmThreads threads that hold the tile (by default the block).
struct BlockSync {
  __device__ void operator()() const { __syncthreads(); }
};
template <int kAcc = kGemmAccPerThread, class At, class Sync = BlockSync>
__device__ __forceinline__ bool reduce_splits(const GemmTf32x3Args& p, int64_t tile, int split,
                                              At at, Sync sync = {}) {
  __shared__ int last;
  const int tid = threadIdx.x;
  float* mine = p.partials + (tile * p.splits + split) * kGemmAccPerThread * kGemmThreads;
  static_assert(kAcc <= kGemmAccPerThread, "a partial tile holds at most 64 per thread");
#pragma unroll
  for (int e = 0; e < kAcc; ++e)
    __stcg(mine + e * kGemmThreads + tid, at(e));
  __threadfence();
  sync();
  if (tid == 0) last = atomicAdd(p.tickets + tile, 1) == p.splits - 1;
  sync();
  if (!last) return false;
  __threadfence();
  // Split by split, each split's 64 loads independent (a split-major walk: one L2 round trip per
  // split, not per accumulator), the additions in split order as before.
  const float* first = p.partials + tile * p.splits * kGemmAccPerThread * kGemmThreads;
  float sum[kAcc];
#pragma unroll
  for (int e = 0; e < kAcc; ++e)
    sum[e] = 0.0f;
  for (int s = 0; s < p.splits; ++s) {
    const float* part = first + s * kGemmAccPerThread * kGemmThreads + tid;
#pragma unroll
    for (int e = 0; e < kAcc; ++e)
      sum[e] += s == split ? at(e) : __ldcg(part + e * kGemmThreads);
  }
#pragma unroll
  for (int e = 0; e < kAcc; ++e)
    at(e) = sum[e];
  if (tid == 0) p.tickets[tile] = 0;  // ready for the next launch
  return true;
}

// The output tile of this block: grouped order, kGemmGroupM tile rows advancing together across
// the tile columns (operands shared by neighbours stay in L2).
struct GemmTileCoord {
  int tm, tn, batch, split;
};
// x: the tile's place in that order, y: batch x splits + split (a launch's blockIdx by default).
__device__ __forceinline__ GemmTileCoord gemm_tile_coord(const GemmTf32x3Args& p, int x, int y) {
  const int group = kGemmGroupM * p.tiles_n, first_m = x / group * kGemmGroupM;
  const int group_m = min(p.tiles_m - first_m, kGemmGroupM), in_group = x % group;
  return {first_m + in_group % group_m, in_group / group_m, y / p.splits, y % p.splits};
}
__device__ __forceinline__ GemmTileCoord gemm_tile_coord(const GemmTf32x3Args& p) {
  return gemm_tile_coord(p, static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y));
}

// D[row, col] of batch `batch` from the product's sum: alpha, beta·C, bias, activation.
__device__ __forceinline__ void store_gemm_output(const GemmTf32x3Args& p, int batch, int row,
                                                  int col, float sum) {
  if (row >= p.m || col >= p.n) return;
  const int64_t at = batch * p.stride_c + int64_t{row} * p.ldc + col;
  float v = p.alpha * sum;
  if (p.accumulate) v += p.beta * p.c[at];
  if (epilogue_has_bias(p.epilogue)) v += p.bias[col];
  p.d[at] = gemm_activation(v, p.epilogue);
}

inline constexpr int kGemmBuiltWgmma = 1, kGemmBuiltMmaSync = 2;

// Writes which kernels the code running on this device holds (kGemmBuilt* bits). A template: one
// definition however many translation units include this.
template <int kUnused = 0>
__global__ void gemm_tf32x3_probe_kernel(int* built) {
  int bits = 0;
#if defined(STITCH_GEMM_WGMMA)
  bits |= kGemmBuiltWgmma;
#endif
#if defined(STITCH_GEMM_MMA_SYNC)
  bits |= kGemmBuiltMmaSync;
#endif
  *built = bits;
}

}  // namespace detail

// The kGemmBuilt* bits of the current device's code (a probe launch and a copy back: call it at
// init, not while capturing); 0 with `error` set when the device cannot be asked.
inline int gemm_tf32x3_kernels_built(std::string& error) {
  int* flag = nullptr;
  int built = 0;
  if (cudaMalloc(&flag, sizeof(int)) != cudaSuccess) {
    error = "gemm_tf32x3_kernels_built: cudaMalloc failed";
    return 0;
  }
  detail::gemm_tf32x3_probe_kernel<><<<1, 1>>>(flag);
  cudaError_t status = cudaGetLastError();
  if (status == cudaSuccess) status = cudaMemcpy(&built, flag, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(flag);
  if (status != cudaSuccess) {
    error = std::string("gemm_tf32x3_kernels_built: ") + cudaGetErrorString(status);
    return 0;
  }
  return built;
}

// The TF32 products the wgmma pipeline makes per multiply-add: three (3xTF32: big·big + big·small
// + small·big, FP32-accurate: the fp32 track) or one (big·big with A and B rounded to TF32: the
// tensor cores' own precision, what the tf32 and bf16 tracks allow, for a third of the tensor-core
// work and half the B bytes per stage). The mma.sync kernels always make three.
enum class Tf32Products { three = 3, one = 1 };

// Which 3xTF32 kernel a GemmTf32x3 or ConvIgemmTf32x3 runs: automatic picks the wgmma one where
// the program's code for the device holds it (sm_90a), mma.sync otherwise; tests and benches force
// one, which fails init where it was not built.
enum class Tf32x3Engine { automatic, mma_sync, wgmma };

// Resolves `requested` against the kernels built for the current device (a probe launch: call it
// at init); `wgmma` says which runs. `who` prefixes the error.
inline int choose_tf32x3_engine(Tf32x3Engine requested, const char* who, bool& wgmma,
                                std::string& error) {
  std::string probe_error;
  const int built = gemm_tf32x3_kernels_built(probe_error);
  if (!probe_error.empty()) {
    error = std::string(who) + ": " + probe_error;
    return STITCH_ERROR_CUDA;
  }
  const bool has_wgmma = (built & detail::kGemmBuiltWgmma) != 0;
  wgmma = requested == Tf32x3Engine::wgmma || (requested == Tf32x3Engine::automatic && has_wgmma);
  if (wgmma ? has_wgmma : (built & detail::kGemmBuiltMmaSync) != 0) return STITCH_OK;
  error = std::string(who) +
          (wgmma ? ": the wgmma kernel cannot run here (it needs a compute capability 9.0 GPU and "
                   "a program built for sm_90a)"
                 : ": the mma.sync kernel was left out of this sm_90a build (define "
                   "STITCH_GEMM_TF32X3_MMA_SYNC_ON_SM90A to keep it)");
  return STITCH_ERROR_INVALID_ARGUMENT;
}

// The split-K partial tiles and per-tile tickets of a GemmTf32x3Plan that splits (nothing when it
// does not); the tickets start at zero and every reduction leaves them so.
class SplitKScratch {
 public:
  SplitKScratch() = default;
  ~SplitKScratch() { release(); }
  SplitKScratch(const SplitKScratch&) = delete;
  SplitKScratch& operator=(const SplitKScratch&) = delete;

  int init(const detail::GemmTf32x3Plan& plan, std::string& error) {
    release();
    if (plan.splits <= 1) return STITCH_OK;
    const size_t partial_bytes = static_cast<size_t>(plan.partial_floats()) * sizeof(float);
    const size_t ticket_bytes = static_cast<size_t>(plan.tiles) * sizeof(int);
    STITCH_CHECK_CUDA(cudaMalloc(&buffer_, partial_bytes + ticket_bytes));
    tickets_ = reinterpret_cast<int*>(static_cast<char*>(buffer_) + partial_bytes);
    STITCH_CHECK_CUDA(cudaMemset(tickets_, 0, ticket_bytes));
    return STITCH_OK;
  }
  float* partials() const { return static_cast<float*>(buffer_); }
  int* tickets() const { return tickets_; }

  void release() {
    if (buffer_ != nullptr) cudaFree(buffer_);
    buffer_ = nullptr;
    tickets_ = nullptr;
  }

 private:
  void* buffer_ = nullptr;  // the partial tiles, then the tickets
  int* tickets_ = nullptr;
};

}  // namespace stitch::kernels
