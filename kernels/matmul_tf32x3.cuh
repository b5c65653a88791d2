// Split-precision 3xTF32 GEMM: FP32-accurate results from TF32 tensor cores, for the fp32 track
// (DESIGN.md: the track is judged by the error a program achieves; 3xTF32 stays at FP32 level,
// plain TF32 does not — python/stitch_harness/judge_tracks.py has the measured error norms).
//
// Every FP32 operand element x is split as x = big + small, big = x rounded to TF32 (10 mantissa
// bits, low 13 bits zero: exact on a tensor core), small = x - big (exact in FP32, |small| <=
// 2^-11 |x|; the tensor core keeps its top 10 bits). Then
//   A·B ≈ big_a·big_b + big_a·small_b + small_a·big_b
// (small_a·small_b is below FP32's rounding). The three products are ONE TF32 GEMM over a K three
// times as long, on split copies laid out as
//   A3 = [big_a | big_a | small_a]   (m × 3k: the K axis is A's columns)
//   B3 = [big_b ; small_b ; big_b]   (3k × n: the K axis is B's rows)
// so accumulation (FP32, in the tensor cores) and the epilogue (bias, ReLU, GELU, beta·C) happen
// once.
//
// Long K is cut into chunks. A tensor core's FP32 accumulation is not IEEE: it truncates (rounds
// toward zero) as it adds, so its error grows with the number of products one accumulator
// takes, and it is biased: it shrinks every partial sum. Measured on an H200 (2026-12-01,
// KernelBench level-1 matmuls of same-signed operands): a relative error norm of 1.2e-4 at
// k = 8192 and 6.2e-5 at k = 4096, about 5e-9 per element of the split K axis, above the fp32
// track's 5e-5. So one tensor-core accumulation runs over at most kMaxTensorCoreRun elements of
// the split K axis (3072: ~1.5e-5 at worst): the split operands are multiplied chunk by chunk, each
// chunk's product added to the output by the GEMM's own epilogue (D = A_c·B_c + 1·D, in FP32 with
// round-to-nearest on the CUDA cores), the user's epilogue applied by the last chunk only. The
// extra cost is one read and write of the output per chunk. On an H200 the TF32 tensor-core rate (~495 TFLOPS dense) is ~7x FP32's (67), so a
// compute-bound GEMM runs ~2x faster at 3x the work; the split copies cost one memory pass over A
// (and over B unless it is constant: prepare_b splits a parameter once, at init).
//
// Interface as LtMatmul (matmul.cuh): init → tune (optional) → [prepare_b] → run, plus the split
// buffers, which this object allocates at init (never in run: run is CUDA-graph capturable).
//
// Not for direct TF32: the TF32 LtMatmul it drives is reachable only through this class. (A
// program's own source naming CUBLAS_COMPUTE_32F_FAST_TF32 is flagged by the static checks; this
// project header is exempt, and the judge's error-norm bound still applies to what it computes.)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "matmul.cuh"
#include "runtime.cuh"

namespace stitch::kernels {

namespace detail {

// x rounded to TF32 (round to nearest, ties away: cvt.rna), as an FP32 bit pattern.
__device__ __forceinline__ float tf32_big(float x) {
  uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(x));
  return __uint_as_float(bits);
}

// One stored operand matrix [rows, cols] (leading dimension ld, `batch` of them `stride` apart;
// stride 0: one matrix shared by the batch) split into `out`: three copies of its elements,
// side by side along the K axis, contiguous per batch, each copy `segment` long along K (K rounded
// up to 4 elements so every row of the copy is 16-byte aligned; the padding stays zero).
// k_along_cols: the K axis is the columns (out is [rows, 3 segment]), else the rows (out is
// [3 segment, cols]). small_in: which of the three copies (0, 1, 2) holds `small`; the other two
// hold `big`.
struct SplitLayout {
  int64_t batch = 1, rows = 0, cols = 0, ld = 0, stride = 0;
  bool k_along_cols = true;
  int small_in = 2;
  int64_t segment = 0;   // >= the K extent (cols or rows)
  int64_t k_extent = 0;  // the split K axis: >= 3 segment (the chunks' padding stays zero too)
  __host__ __device__ int64_t other_extent() const { return k_along_cols ? rows : cols; }
  __host__ __device__ int64_t out_batch_elems() const { return k_extent * other_extent(); }
  __host__ __device__ int64_t out_batches() const { return stride == 0 ? 1 : batch; }
};

// Where copy `copy` (0..2) of source element (batch b, row r, col c) goes in the split buffer.
__host__ __device__ inline int64_t split_offset(const SplitLayout& l, int64_t b, int64_t r,
                                                int64_t c, int copy) {
  const int64_t base = b * l.out_batch_elems();
  return l.k_along_cols ? base + r * l.k_extent + copy * l.segment + c
                        : base + (copy * l.segment + r) * l.cols + c;
}

__global__ void __launch_bounds__(256)
    split_tf32x3_kernel(const float* __restrict__ x, float* __restrict__ out, SplitLayout l) {
  const int64_t per_batch = l.rows * l.cols;
  const int64_t total = per_batch * l.out_batches();
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t b = e / per_batch, rc = e % per_batch;
    const int64_t r = rc / l.cols, c = rc % l.cols;
    const float v = x[b * l.stride + r * l.ld + c];
    const float big = tf32_big(v);
    // Inf and NaN go to `big` whole; small = v - big would be NaN for an infinity.
    const float small = isfinite(v) ? v - big : 0.0f;
    for (int copy = 0; copy < 3; ++copy)
      out[split_offset(l, b, r, c, copy)] = copy == l.small_in ? small : big;
  }
}

inline int launch_split_tf32x3(const float* x, float* out, const SplitLayout& layout,
                               cudaStream_t stream) {
  const int64_t total = layout.rows * layout.cols * layout.out_batches();
  if (total == 0) return STITCH_OK;
  const int64_t blocks = (total + 255) / 256;
  split_tf32x3_kernel<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), 256, 0, stream>>>(
      x, out, layout);
  return static_cast<int>(cudaGetLastError());
}

// The longest run of the split K axis one tensor-core accumulation takes (see the top).
inline constexpr int64_t kMaxTensorCoreRun = 3072;

// The split layouts of A and B for a row-major problem (see MatmulShape), and the problem on the
// split copies, chunk by chunk. Pure (tested on the CPU).
struct Tf32x3Problem {
  SplitLayout a, b;
  MatmulShape split;  // one chunk's TF32 GEMM (k = chunk_k) on the contiguous split copies
  int64_t chunks = 1;
  int64_t chunk_k = 0;                       // chunks * chunk_k = the split K axis
  int64_t a_chunk_step = 0, b_chunk_step = 0;  // elements between chunks' first A and B elements
};

inline Tf32x3Problem tf32x3_problem(const MatmulShape& s, int64_t max_run = kMaxTensorCoreRun) {
  Tf32x3Problem p;
  const int64_t segment = (s.k + 3) / 4 * 4;
  // One chunk when 3 segments fit in one run (the layout of old); else equal chunks, each a
  // multiple of 32 elements (128-byte aligned chunk starts), the last one padded with zeros.
  p.chunks = 3 * segment <= max_run ? 1 : (3 * segment + max_run - 1) / max_run;
  p.chunk_k = p.chunks == 1 ? 3 * segment : ((3 * segment + p.chunks - 1) / p.chunks + 31) / 32 * 32;
  const int64_t k_extent = p.chunks * p.chunk_k;
  // A is [m, k] stored ([k, m] when trans_a): K runs along its columns unless transposed.
  p.a = SplitLayout{s.batch,    s.trans_a ? s.k : s.m, s.trans_a ? s.m : s.k, s.lda, s.stride_a,
                    !s.trans_a, /*small_in=*/2,        segment,               k_extent};
  // B is [k, n] stored ([n, k] when trans_b): K runs along its rows unless transposed.
  p.b = SplitLayout{s.batch,   s.trans_b ? s.n : s.k, s.trans_b ? s.k : s.n, s.ldb, s.stride_b,
                    s.trans_b, /*small_in=*/1,        segment,               k_extent};
  p.split = s;
  p.split.k = p.chunk_k;
  p.split.lda = s.trans_a ? s.m : k_extent;
  p.split.ldb = s.trans_b ? k_extent : s.n;
  p.split.stride_a = s.stride_a == 0 ? 0 : p.a.out_batch_elems();
  p.split.stride_b = s.stride_b == 0 ? 0 : p.b.out_batch_elems();
  p.a_chunk_step = s.trans_a ? p.chunk_k * s.m : p.chunk_k;
  p.b_chunk_step = s.trans_b ? p.chunk_k : p.chunk_k * s.n;
  return p;
}

}  // namespace detail

class Tf32x3Matmul {
 public:
  Tf32x3Matmul() = default;
  ~Tf32x3Matmul() { release(); }
  Tf32x3Matmul(const Tf32x3Matmul&) = delete;
  Tf32x3Matmul& operator=(const Tf32x3Matmul&) = delete;

  // As LtMatmul::init (same shape, epilogue, accumulate_c, workspace and alignment contract), and
  // allocates the split copies of A and B (3x each operand's elements).
  int init(cublasLtHandle_t handle, const MatmulShape& shape, MatmulEpilogue epilogue,
           bool accumulate_c, void* workspace, size_t workspace_bytes, std::string& error,
           int alignment_bytes = 16) {
    release();
    detail::LtProblem checked;
    std::string bad = detail::lt_problem(shape, checked);
    if (!bad.empty()) {
      error = "Tf32x3Matmul::init: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    problem_ = detail::tf32x3_problem(shape);
    const size_t a_elems = static_cast<size_t>(problem_.a.out_batch_elems() * problem_.a.out_batches());
    const size_t b_elems = static_cast<size_t>(problem_.b.out_batch_elems() * problem_.b.out_batches());
    // cudaMalloc returns 256-byte aligned memory; B's copy starts at a 256-byte boundary too.
    a_bytes_ = (a_elems * sizeof(float) + 255) / 256 * 256;
    const size_t bytes = a_bytes_ + b_elems * sizeof(float);
    if (bytes > 0) {
      STITCH_CHECK_CUDA(cudaMalloc(&split_, bytes));
      STITCH_CHECK_CUDA(cudaMemset(split_, 0, bytes));  // the K padding stays zero
    }
    // One GEMM per chunk kind: the first (the caller's accumulate_c; its epilogue only when it is
    // the only chunk), the middle ones (D += A_c·B_c) and the last (D += A_c·B_c, then epilogue).
    const int64_t chunks = problem_.chunks;
    auto init_chunk = [&](LtMatmul& gemm, MatmulEpilogue chunk_epilogue, bool chunk_accumulate) {
      return gemm.init_with_compute(handle, problem_.split, chunk_epilogue, chunk_accumulate,
                                    workspace, workspace_bytes, error, alignment_bytes,
                                    LtMatmul::Compute::fast_tf32);
    };
    int status = init_chunk(gemm_, chunks == 1 ? epilogue : MatmulEpilogue::none, accumulate_c);
    if (status == STITCH_OK && chunks > 2) status = init_chunk(middle_, MatmulEpilogue::none, true);
    if (status == STITCH_OK && chunks > 1) status = init_chunk(last_, epilogue, true);
    if (status != STITCH_ERROR_LIBRARY) return status;
    // cuBLASLt has no TF32 algorithm for this problem: strict FP32 on the operands as they are.
    release();
    strict_fallback_ = true;
    return gemm_.init(handle, shape, epilogue, accumulate_c, workspace, workspace_bytes, error,
                      alignment_bytes);
  }

  // Splits a constant B (a parameter) once; run() then takes b == nullptr and uses this split.
  int prepare_b(const float* b, cudaStream_t stream, std::string& error) {
    if (strict_fallback_) {
      prepared_b_ = b;
      return STITCH_OK;
    }
    if (split_ == nullptr) {
      error = "Tf32x3Matmul::prepare_b before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    STITCH_CHECK_CUDA(static_cast<cudaError_t>(
        detail::launch_split_tf32x3(b, split_b(), problem_.b, stream)));
    b_prepared_ = true;
    return STITCH_OK;
  }

  // Splits the scratch operands and times the GEMM's candidates on them (LtMatmul::tune). Call
  // before prepare_b: tuning overwrites the split of B.
  int tune(const float* a, const float* b, float* c, const float* bias, cudaStream_t stream,
           std::string& error, int iterations = 5) {
    if (strict_fallback_) return gemm_.tune(a, b, c, bias, stream, error, iterations);
    STITCH_CHECK(split(a, b, stream, error));
    b_prepared_ = false;
    const int64_t chunks = problem_.chunks;
    STITCH_CHECK(gemm_.tune(split_a(), split_b(), c, chunks == 1 ? bias : nullptr, stream, error,
                            iterations));
    if (chunks > 2) STITCH_CHECK(middle_.tune(split_a(), split_b(), c, nullptr, stream, error,
                                              iterations));
    if (chunks > 1) STITCH_CHECK(last_.tune(split_a(), split_b(), c, bias, stream, error,
                                            iterations));
    return STITCH_OK;
  }

  // As LtMatmul::run; b may be nullptr after prepare_b.
  int run(const float* a, const float* b, const float* c_in, float* d, const float* bias,
          float alpha, float beta, cudaStream_t stream, std::string& error) const {
    if (strict_fallback_)
      return gemm_.run(a, b != nullptr ? b : prepared_b_, c_in, d, bias, alpha, beta, stream, error);
    if (split_ == nullptr) {
      error = "Tf32x3Matmul::run before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (b == nullptr && !b_prepared_) {
      error = "Tf32x3Matmul::run: b is null and prepare_b was not called";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    STITCH_CHECK(split(a, b, stream, error));
    const int64_t chunks = problem_.chunks;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const bool first = chunk == 0, last = chunk == chunks - 1;
      const LtMatmul& gemm = first ? gemm_ : last ? last_ : middle_;
      STITCH_CHECK(gemm.run(split_a() + chunk * problem_.a_chunk_step,
                            split_b() + chunk * problem_.b_chunk_step, first ? c_in : d, d,
                            last ? bias : nullptr, alpha, first ? beta : 1.0f, stream, error));
    }
    return STITCH_OK;
  }

  std::string describe() const {
    if (strict_fallback_)
      return "strict FP32 (no TF32 algorithm for the split problem), " + gemm_.describe();
    std::string chunking;
    if (problem_.chunks > 1)
      chunking = std::to_string(problem_.chunks) + " chunks of " +
                 std::to_string(problem_.chunk_k) + " along the split K axis, ";
    return "3xTF32 split precision, " + chunking + gemm_.describe();
  }
  int64_t chunks() const { return problem_.chunks; }
  bool strict_fallback() const { return strict_fallback_; }

 private:
  float* split_a() const { return static_cast<float*>(split_); }
  float* split_b() const {
    return reinterpret_cast<float*>(static_cast<char*>(split_) + a_bytes_);
  }

  // Splits a, and b unless it is null (prepared).
  int split(const float* a, const float* b, cudaStream_t stream, std::string& error) const {
    if (a == nullptr) {
      error = "Tf32x3Matmul: null A";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    STITCH_CHECK_CUDA(
        static_cast<cudaError_t>(detail::launch_split_tf32x3(a, split_a(), problem_.a, stream)));
    if (b != nullptr)
      STITCH_CHECK_CUDA(
          static_cast<cudaError_t>(detail::launch_split_tf32x3(b, split_b(), problem_.b, stream)));
    return STITCH_OK;
  }

  void release() {
    middle_.release();
    last_.release();
    if (split_ != nullptr) cudaFree(split_);
    split_ = nullptr;
    a_bytes_ = 0;
    b_prepared_ = false;
    strict_fallback_ = false;
    prepared_b_ = nullptr;
  }

  LtMatmul gemm_;    // the first chunk (the only one for a short K; the strict fallback)
  LtMatmul middle_;  // chunks between the first and the last (3 or more chunks)
  LtMatmul last_;    // the last chunk, with the epilogue (2 or more chunks)
  detail::Tf32x3Problem problem_;
  void* split_ = nullptr;
  size_t a_bytes_ = 0;
  bool b_prepared_ = false;
  bool strict_fallback_ = false;
  const float* prepared_b_ = nullptr;  // strict fallback: prepare_b keeps the pointer
};

}  // namespace stitch::kernels
