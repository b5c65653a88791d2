// Row-major FP32 GEMM through cuBLASLt, with an optional bias / ReLU / GELU epilogue and strided
// batches (stride 0 broadcasts an operand). The math is strict FP32 (CUBLAS_COMPUTE_32F) unless
// init_with_compute asks for tensor cores: fast_tf32 is the engine of the split-precision
// Tf32x3Matmul (matmul_tf32x3.cuh) and the tf32 track's GEMM; fast_bf16 the bf16 track's (FP32 data,
// BF16 products, FP32 accumulation). The static checks flag both names in candidate code on a track
// that does not allow them.
//
// cuBLASLt is column-major. A row-major [r, c] matrix with leading dimension ld is, read
// column-major, its transpose [c, r] with the same ld, so row-major C = A·B is computed as
// column-major Cᵀ = Bᵀ·Aᵀ: cuBLASLt's "A" is our B, its "B" is our A, its M is n and its N is m.
// A bias over C's columns (one value per output feature, added to every row) is then a vector over
// the column-major result's rows — exactly what CUBLASLT_EPILOGUE_BIAS adds.
//
// GELU: cuBLASLt's GELU epilogue is the tanh approximation
//   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// not PyTorch's default erf GELU; epilogue_matches_exact_gelu says so to the planner, which should
// fuse it only for approximate='tanh'.
//
// Life cycle: init (descriptors, layouts, up to 8 heuristic candidates) → tune (optional: times
// each candidate on scratch buffers, keeps the fastest; synchronises, so not while capturing) → run
// (no allocation, no synchronisation: CUDA-graph capturable).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>

#include "runtime.cuh"

namespace stitch::kernels {

// Row-major: A is [m, k] ([k, m] stored when trans_a), B is [k, n] ([n, k] stored when trans_b),
// C is [m, n] with leading dimension ldc. Leading dimensions and batch strides in elements;
// stride 0 broadcasts A or B over the batch (C's stride must not be 0 when batch > 1).
struct MatmulShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
  bool trans_a = false, trans_b = false;
};

enum class MatmulEpilogue { none, relu, gelu, bias, bias_relu, bias_gelu };

// cuBLASLt's GELU is the tanh approximation (see the top of this file).
inline constexpr bool epilogue_matches_exact_gelu = false;

__host__ __device__ inline constexpr bool epilogue_has_bias(MatmulEpilogue e) {
  return e == MatmulEpilogue::bias || e == MatmulEpilogue::bias_relu ||
         e == MatmulEpilogue::bias_gelu;
}

namespace detail {

// The column-major problem cuBLASLt sees (pure: tested on the CPU).
struct LtProblem {
  cublasOperation_t op_a = CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  // Stored (column-major) rows/cols and leading dimension of cuBLASLt's A (our B), B (our A), C/D.
  uint64_t a_rows = 0, a_cols = 0, b_rows = 0, b_cols = 0, c_rows = 0, c_cols = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;
};

// Fills `p` for `s`; an empty string, or what is wrong with the shape.
inline std::string lt_problem(const MatmulShape& s, LtProblem& p) {
  if (s.batch < 1 || s.m < 0 || s.n < 0 || s.k < 0) return "negative size or batch < 1";
  if (s.batch > INT32_MAX) return "batch does not fit cuBLASLt's int32 batch count";
  // Our B → cuBLASLt's A: [k, n] row-major is [n, k] column-major (op N); [n, k] stored is [k, n]
  // column-major, transposed (op T).
  p.op_a = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.a_rows = static_cast<uint64_t>(s.trans_b ? s.k : s.n);
  p.a_cols = static_cast<uint64_t>(s.trans_b ? s.n : s.k);
  p.lda = s.ldb;
  // Our A → cuBLASLt's B: [m, k] row-major is [k, m] column-major (op N).
  p.op_b = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  p.b_rows = static_cast<uint64_t>(s.trans_a ? s.m : s.k);
  p.b_cols = static_cast<uint64_t>(s.trans_a ? s.k : s.m);
  p.ldb = s.lda;
  p.c_rows = static_cast<uint64_t>(s.n);
  p.c_cols = static_cast<uint64_t>(s.m);
  p.ldc = s.ldc;
  p.stride_a = s.stride_b;
  p.stride_b = s.stride_a;
  p.stride_c = s.stride_c;
  auto min_ld = [](uint64_t rows) { return static_cast<int64_t>(rows > 1 ? rows : 1); };
  if (p.lda < min_ld(p.a_rows)) return "ldb smaller than B's row length";
  if (p.ldb < min_ld(p.b_rows)) return "lda smaller than A's row length";
  if (p.ldc < min_ld(p.c_rows)) return "ldc smaller than n";
  if (s.stride_a < 0 || s.stride_b < 0 || s.stride_c < 0) return "negative batch stride";
  if (s.batch > 1 && s.stride_c == 0) return "stride_c == 0 with batch > 1 (outputs would overlap)";
  return {};
}

// A batch that shares one B (x·W for a batch of x) and whose A and C batches are back to back
// (non-transposed A) is a single GEMM with batch·m rows: one larger problem instead of a batched
// one.
inline MatmulShape fold_shared_b(MatmulShape s) {
  if (s.batch > 1 && s.stride_b == 0 && !s.trans_a && s.stride_a == s.m * s.lda &&
      s.stride_c == s.m * s.ldc) {
    s.m *= s.batch;
    s.batch = 1;
    s.stride_a = s.stride_c = 0;
  }
  return s;
}

// Largest power of two up to `cap` dividing `bytes` (cap when bytes == 0).
inline uint32_t alignment_of(uint64_t bytes, uint32_t cap) {
  uint32_t a = cap;
  while (a > 1 && bytes % a != 0)
    a /= 2;
  return a;
}

inline bool is_aligned(const void* p, uint32_t alignment) {
  return reinterpret_cast<uintptr_t>(p) % alignment == 0;
}

inline cublasLtEpilogue_t lt_epilogue(MatmulEpilogue e) {
  switch (e) {
    case MatmulEpilogue::none:
      return CUBLASLT_EPILOGUE_DEFAULT;
    case MatmulEpilogue::relu:
      return CUBLASLT_EPILOGUE_RELU;
    case MatmulEpilogue::gelu:
      return CUBLASLT_EPILOGUE_GELU;
    case MatmulEpilogue::bias:
      return CUBLASLT_EPILOGUE_BIAS;
    case MatmulEpilogue::bias_relu:
      return CUBLASLT_EPILOGUE_RELU_BIAS;
    case MatmulEpilogue::bias_gelu:
      return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

}  // namespace detail

class Tf32x3Matmul;  // matmul_tf32x3.cuh

class LtMatmul {
 public:
  static constexpr int kMaxCandidates = 8;
  // What the GEMM computes with on FP32 data (see the header comment).
  enum class Compute { strict_fp32, fast_tf32, fast_bf16 };

  LtMatmul() = default;
  ~LtMatmul() { release(); }
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;
  LtMatmul(LtMatmul&& other) noexcept { take(other); }
  LtMatmul& operator=(LtMatmul&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }

  // Builds the descriptors and queries up to kMaxCandidates algorithms (the heuristic's first is
  // used until tune picks another). A batch sharing B with back-to-back A and C batches is run as
  // one GEMM of batch·m rows. `workspace` (workspace_bytes, may be 0 / nullptr) is used by
  // every run; 32 MiB is cuBLASLt's recommendation on Hopper. alignment_bytes (a power of two, 4 to
  // 256): what run() may assume of every pointer (a, b, c, d, bias); run() rejects pointers that
  // are less aligned. Returns STITCH_OK, or STITCH_ERROR_INVALID_ARGUMENT / STITCH_ERROR_LIBRARY
  // with `error` set. k == 0 is rejected (fill the output instead).
  int init(cublasLtHandle_t handle, const MatmulShape& requested, MatmulEpilogue epilogue,
           bool accumulate_c, void* workspace, size_t workspace_bytes, std::string& error,
           int alignment_bytes = 16) {
    return init_with_compute(handle, requested, epilogue, accumulate_c, workspace,
                             workspace_bytes, error, alignment_bytes, Compute::strict_fp32);
  }

  // Times every candidate (one warm-up, then `iterations` runs, CUDA events on `stream`) on the
  // given buffers — their contents are overwritten (c is both C and D) — and keeps the fastest.
  // Candidates that fail to run are skipped. Synchronises the stream.
  int tune(const float* a, const float* b, float* c, const float* bias, cudaStream_t stream,
           std::string& error, int iterations = 5) {
    if (empty_ || count_ <= 1) return STITCH_OK;
    if (iterations < 1) iterations = 1;
    cudaEvent_t start = nullptr, stop = nullptr;
    STITCH_CHECK_CUDA(cudaEventCreate(&start));
    const cudaError_t created = cudaEventCreate(&stop);
    if (created != cudaSuccess) cudaEventDestroy(start);
    STITCH_CHECK_CUDA(created);
    const float beta = accumulate_c_ ? 1.0f : 0.0f;
    int best = -1;
    float best_ms = 0.0f;
    int status = STITCH_OK;
    for (int candidate = 0; candidate < count_ && status == STITCH_OK; ++candidate) {
      std::string ignored;
      if (run_with(results_[candidate].algo, a, b, c, c, bias, 1.0f, beta, stream, ignored) !=
          STITCH_OK) {
        (void)cudaGetLastError();
        continue;
      }
      bool ok = cudaEventRecord(start, stream) == cudaSuccess;
      for (int i = 0; i < iterations && ok; ++i)
        ok = run_with(results_[candidate].algo, a, b, c, c, bias, 1.0f, beta, stream, ignored) ==
             STITCH_OK;
      ok = ok && cudaEventRecord(stop, stream) == cudaSuccess;
      const cudaError_t synced = cudaEventSynchronize(stop);
      if (synced != cudaSuccess && ok) {
        // A fault inside a kernel is sticky: report it rather than trying further candidates.
        error = detail::format_failure(__FILE__, __LINE__, "cudaEventSynchronize(stop)",
                                       cudaGetErrorName(synced), cudaGetErrorString(synced));
        status = STITCH_ERROR_CUDA;
        break;
      }
      float ms = 0.0f;
      if (!ok || cudaEventElapsedTime(&ms, start, stop) != cudaSuccess) {
        (void)cudaGetLastError();
        continue;
      }
      if (best < 0 || ms < best_ms) {
        best = candidate;
        best_ms = ms;
      }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (status != STITCH_OK) return status;
    if (best < 0) {
      error = "LtMatmul::tune: no candidate algorithm ran for " + shape_text();
      return STITCH_ERROR_LIBRARY;
    }
    chosen_ = best;
    tuned_ms_ = best_ms / static_cast<float>(iterations);
    return STITCH_OK;
  }

  // D = epilogue(alpha · A·B + beta · C [+ bias]) on `stream`. c_in is read only when
  // accumulate_c (then it is required; it may equal d); beta must be 0 otherwise. bias: [n]
  // float32, required by the bias epilogues. Every pointer must have the alignment promised to
  // init. Returns STITCH_OK, STITCH_ERROR_INVALID_ARGUMENT or STITCH_ERROR_LIBRARY with `error`
  // set. Not thread-safe on one object (the bias pointer is set on the shared descriptor).
  int run(const float* a, const float* b, const float* c_in, float* d, const float* bias,
          float alpha, float beta, cudaStream_t stream, std::string& error) const {
    if (count_ <= 0 && !empty_) {
      error = "LtMatmul::run before a successful init";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (empty_) return STITCH_OK;
    if (!accumulate_c_ && beta != 0.0f) {
      error = "LtMatmul::run: beta != 0 but init was told accumulate_c = false";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (accumulate_c_ && c_in == nullptr) {
      error = "LtMatmul::run: accumulate_c needs c_in";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (epilogue_has_bias(epilogue_) && bias == nullptr) {
      error = "LtMatmul::run: the bias epilogue needs a bias";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    return run_with(results_[chosen_].algo, a, b, accumulate_c_ ? c_in : d, d, bias, alpha, beta,
                    stream, error);
  }

  // "algo 21 tile 18 stages 8 splitk 1 reduction 0 swizzle 0 custom 0 workspace 0 B, candidate 1/8,
  // 0.0123 ms" (time only after tune).
  std::string describe() const {
    if (empty_) return "empty problem (m or n is 0)";
    if (count_ <= 0) return "not initialised";
    const cublasLtMatmulAlgo_t& algo = results_[chosen_].algo;
    auto config = [&](cublasLtMatmulAlgoConfigAttributes_t attribute) -> std::string {
      uint32_t value = 0;  // every attribute read here is 32-bit (uint32 or int32)
      size_t written = 0;
      if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof(value), &written) !=
          CUBLAS_STATUS_SUCCESS)
        return "?";
      return std::to_string(value);
    };
    std::string out = "algo " + config(CUBLASLT_ALGO_CONFIG_ID) + " tile " +
                      config(CUBLASLT_ALGO_CONFIG_TILE_ID) + " stages " +
                      config(CUBLASLT_ALGO_CONFIG_STAGES_ID) + " splitk " +
                      config(CUBLASLT_ALGO_CONFIG_SPLITK_NUM) + " reduction " +
                      config(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) + " swizzle " +
                      config(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING) + " custom " +
                      config(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION) + " workspace " +
                      std::to_string(results_[chosen_].workspaceSize) + " B, candidate " +
                      std::to_string(chosen_ + 1) + "/" + std::to_string(count_);
    if (tuned_ms_ >= 0.0f) out += ", " + std::to_string(tuned_ms_) + " ms";
    return out;
  }

  int candidates() const { return count_ > 0 ? count_ : 0; }
  int chosen() const { return chosen_; }

  // init with the given math: the tf32 and bf16 tracks, and Tf32x3Matmul's chunks.
  int init_with_compute(cublasLtHandle_t handle, const MatmulShape& requested,
                        MatmulEpilogue epilogue, bool accumulate_c, void* workspace,
                        size_t workspace_bytes, std::string& error, int alignment_bytes,
                        Compute compute) {
    release();

    const MatmulShape shape = detail::fold_shared_b(requested);
    detail::LtProblem p;
    std::string bad = detail::lt_problem(shape, p);
    if (bad.empty() && shape.k == 0) bad = "k == 0";
    if (bad.empty() && (alignment_bytes < 4 || alignment_bytes > 256 ||
                        (alignment_bytes & (alignment_bytes - 1)) != 0))
      bad = "alignment_bytes must be a power of two from 4 to 256";
    if (bad.empty() && handle == nullptr) bad = "null cuBLASLt handle";
    if (bad.empty() && workspace_bytes > 0 && workspace == nullptr)
      bad = "null workspace with workspace_bytes > 0";
    if (!bad.empty()) {
      error = "LtMatmul::init: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    handle_ = handle;
    shape_ = shape;
    epilogue_ = epilogue;
    accumulate_c_ = accumulate_c;
    workspace_ = workspace;
    workspace_bytes_ = workspace_bytes;
    alignment_ = static_cast<uint32_t>(alignment_bytes);
    empty_ = shape.m == 0 || shape.n == 0;
    if (empty_) return STITCH_OK;

    cublasComputeType_t compute_type = CUBLAS_COMPUTE_32F;
    if (compute == Compute::fast_tf32) compute_type = CUBLAS_COMPUTE_32F_FAST_TF32;
    if (compute == Compute::fast_bf16) compute_type = CUBLAS_COMPUTE_32F_FAST_16BF;
    STITCH_CHECK_CUBLAS(cublasLtMatmulDescCreate(&desc_, compute_type, CUDA_R_32F));
    STITCH_CHECK_CUBLAS(set_desc(CUBLASLT_MATMUL_DESC_TRANSA, p.op_a));
    STITCH_CHECK_CUBLAS(set_desc(CUBLASLT_MATMUL_DESC_TRANSB, p.op_b));
    const cublasLtEpilogue_t lt_epilogue = detail::lt_epilogue(epilogue);
    STITCH_CHECK_CUBLAS(set_desc(CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue));
    if (epilogue_has_bias(epilogue)) {
      // The heuristic does not dereference the bias pointer but reads its alignment from it: give
      // it one aligned exactly as promised, the real pointer is set by every run.
      const void* promised = reinterpret_cast<const void*>(static_cast<uintptr_t>(alignment_));
      STITCH_CHECK_CUBLAS(set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, promised));
      const cudaDataType_t bias_type = CUDA_R_32F;
      STITCH_CHECK_CUBLAS(set_desc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type));
      const int64_t bias_batch_stride = 0;  // one bias for every batch
      STITCH_CHECK_CUBLAS(set_desc(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_batch_stride));
    }

    STITCH_CHECK_CUBLAS(make_layout(&a_, p.a_rows, p.a_cols, p.lda, p.stride_a));
    STITCH_CHECK_CUBLAS(make_layout(&b_, p.b_rows, p.b_cols, p.ldb, p.stride_b));
    STITCH_CHECK_CUBLAS(make_layout(&c_, p.c_rows, p.c_cols, p.ldc, p.stride_c));

    // Per-batch matrices start at pointer + i * stride: their alignment is the pointer's and the
    // stride's together.
    auto batch_alignment = [&](int64_t stride) {
      return shape.batch > 1 ? detail::alignment_of(static_cast<uint64_t>(stride) * 4, alignment_)
                             : alignment_;
    };
    const uint32_t align_a = batch_alignment(p.stride_a);
    const uint32_t align_b = batch_alignment(p.stride_b);
    const uint32_t align_c = batch_alignment(p.stride_c);
    cublasLtMatmulPreference_t preference = nullptr;
    STITCH_CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&preference));
    const uint64_t max_workspace = workspace_bytes;
    cublasStatus_t status =
        cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &max_workspace, sizeof(max_workspace));
    const std::pair<cublasLtMatmulPreferenceAttributes_t, uint32_t> alignments[] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align_a},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align_b},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align_c},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align_c}};
    for (const auto& [attribute, value] : alignments)
      if (status == CUBLAS_STATUS_SUCCESS)
        status = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &value, sizeof(value));
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulAlgoGetHeuristic(handle_, desc_, a_, b_, c_, c_, preference,
                                              kMaxCandidates, results_, &count_);
    cublasLtMatmulPreferenceDestroy(preference);
    STITCH_CHECK_CUBLAS(status);
    if (count_ <= 0) {
      error = "LtMatmul::init: cuBLASLt has no algorithm for " + shape_text();
      return STITCH_ERROR_LIBRARY;
    }
    chosen_ = 0;
    return STITCH_OK;
  }

 private:
  friend class Tf32x3Matmul;  // releases its chunk GEMMs

  template <class T>
  cublasStatus_t set_desc(cublasLtMatmulDescAttributes_t attribute, const T& value) const {
    return cublasLtMatmulDescSetAttribute(desc_, attribute, &value, sizeof(value));
  }

  cublasStatus_t make_layout(cublasLtMatrixLayout_t* layout, uint64_t rows, uint64_t cols,
                             int64_t ld, int64_t stride) const {
    cublasStatus_t s = cublasLtMatrixLayoutCreate(layout, CUDA_R_32F, rows, cols, ld);
    if (s != CUBLAS_STATUS_SUCCESS || shape_.batch == 1) return s;
    const int32_t batch = static_cast<int32_t>(shape_.batch);
    s = cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                         sizeof(batch));
    if (s != CUBLAS_STATUS_SUCCESS) return s;
    return cublasLtMatrixLayoutSetAttribute(*layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                            &stride, sizeof(stride));
  }

  int run_with(const cublasLtMatmulAlgo_t& algo, const float* a, const float* b, const float* c,
               float* d, const float* bias, float alpha, float beta, cudaStream_t stream,
               std::string& error) const {
    if (a == nullptr || b == nullptr || d == nullptr) {
      error = "LtMatmul: null matrix pointer";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    const void* pointers[] = {a, b, c, d, bias};
    const char* names[] = {"a", "b", "c", "d", "bias"};
    for (int i = 0; i < 5; ++i)
      if (pointers[i] != nullptr && !detail::is_aligned(pointers[i], alignment_)) {
        error = std::string("LtMatmul: pointer ") + names[i] + " is not " +
                std::to_string(alignment_) + "-byte aligned as promised to init";
        return STITCH_ERROR_INVALID_ARGUMENT;
      }
    if (epilogue_has_bias(epilogue_))
      STITCH_CHECK_CUBLAS(set_desc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias));
    // cuBLASLt's A is our B and its B our A (see the top of this file).
    STITCH_CHECK_CUBLAS(cublasLtMatmul(handle_, desc_, &alpha, b, a_, a, b_, &beta, c, c_, d, c_,
                                       &algo, workspace_, workspace_bytes_, stream));
    return STITCH_OK;
  }

  std::string shape_text() const {
    return "batch " + std::to_string(shape_.batch) + " m " + std::to_string(shape_.m) + " n " +
           std::to_string(shape_.n) + " k " + std::to_string(shape_.k) +
           (shape_.trans_a ? " trans_a" : "") + (shape_.trans_b ? " trans_b" : "");
  }

  void release() {
    if (a_ != nullptr) cublasLtMatrixLayoutDestroy(a_);
    if (b_ != nullptr) cublasLtMatrixLayoutDestroy(b_);
    if (c_ != nullptr) cublasLtMatrixLayoutDestroy(c_);
    if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
    a_ = b_ = c_ = nullptr;
    desc_ = nullptr;
    count_ = 0;
    chosen_ = 0;
    empty_ = false;
    tuned_ms_ = -1.0f;
  }

  void take(LtMatmul& o) {
    handle_ = o.handle_;
    desc_ = std::exchange(o.desc_, nullptr);
    a_ = std::exchange(o.a_, nullptr);
    b_ = std::exchange(o.b_, nullptr);
    c_ = std::exchange(o.c_, nullptr);
    for (int i = 0; i < kMaxCandidates; ++i)
      results_[i] = o.results_[i];
    count_ = std::exchange(o.count_, 0);
    chosen_ = o.chosen_;
    workspace_ = o.workspace_;
    workspace_bytes_ = o.workspace_bytes_;
    shape_ = o.shape_;
    epilogue_ = o.epilogue_;
    accumulate_c_ = o.accumulate_c_;
    alignment_ = o.alignment_;
    empty_ = std::exchange(o.empty_, false);
    tuned_ms_ = o.tuned_ms_;
  }

  cublasLtHandle_t handle_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;  // cuBLASLt's A, B, C (= D)
  cublasLtMatmulHeuristicResult_t results_[kMaxCandidates] = {};
  int count_ = 0;
  int chosen_ = 0;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  MatmulShape shape_;
  MatmulEpilogue epilogue_ = MatmulEpilogue::none;
  bool accumulate_c_ = false;
  uint32_t alignment_ = 16;
  bool empty_ = false;
  float tuned_ms_ = -1.0f;
};

}  // namespace stitch::kernels
