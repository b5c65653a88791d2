// Bench of the fused flash-style attention in each arithmetic (kernels/attention_mma.cuh
// AttentionMath: fp32_fma — kernels/attention.cuh's FP32 FMA kernel —, tf32x3, tf32, bf16) against
// the unfused baseline a program would run without it: cuBLAS strict-FP32 batched GEMM for Q Kᵀ
// (scale in alpha), kernels/row.cuh's softmax (a causal mask in its load functor), cuBLAS for P V.
// Shapes of GPT-2 / MiniGPT blocks, a ViT, head dims 32-128 and a ragged length. Not a test: built
// on demand (target attention_bench) and run on a GPU by hand. One line per shape: cuBLAS's time,
// then per math its time and its max |difference| / max |value| against the cuBLAS output (fp32
// track: FMA and 3xTF32 should sit near 1e-6; tf32 ~1e-3, bf16 ~1e-2), then the fp32 track's pick
// — the faster of fp32_fma and tf32x3, which src/plan/kernel_choice.h's kAttentionFp32SplitTf32x3
// should follow — with its speedup over cuBLAS and its FLOP/s (causal FLOPs counted as visited).
//
// Per shape: every output compared, then each timed with CUDA events, L2 flushed before every run,
// the median of kIterations after warm-ups.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bench_support.cuh"
#include "kernels/attention.cuh"
#include "kernels/attention_mma.cuh"
#include "kernels/row.cuh"

namespace {

using namespace stitch::kernels;

constexpr AttentionMath kMaths[] = {AttentionMath::fp32_fma, AttentionMath::tf32x3,
                                    AttentionMath::tf32, AttentionMath::bf16};
constexpr int kIterations = 20, kWarmups = 3;

// bench_support.cuh's median at this bench's warm-ups and iterations.
template <class Run>
double median_ms(Run run, void* flush) {
  return stitch::bench::median_ms(run, flush, kWarmups, kIterations);
}

#define CHECK_CUBLAS(x)                                                  \
  do {                                                                   \
    cublasStatus_t s_ = (x);                                             \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                   \
      std::printf("cuBLAS error %d at %s:%d\n", s_, __FILE__, __LINE__); \
      std::exit(1);                                                      \
    }                                                                    \
  } while (0)

struct Case {
  const char* name;
  int64_t batch, heads, seq, dim;
  bool causal;
};

// The softmax's input and output over the [batch * heads * seq, seq] scores; causal: -inf above
// the diagonal.
struct ScoresLoad {
  const float* s;
  int64_t seq;
  bool causal;
  __device__ float operator()(int64_t row, int64_t col) const {
    return causal && col > row % seq ? -INFINITY : s[row * seq + col];
  }
};
struct ScoresStore {
  float* p;
  int64_t seq;
  __device__ void operator()(int64_t row, int64_t col, float y) const { p[row * seq + col] = y; }
};

AttentionOperand contiguous(const float* data, const Case& c) {
  AttentionOperand o;
  o.data = data;
  o.stride[0] = c.heads * c.seq * c.dim, o.stride[1] = c.seq * c.dim, o.stride[2] = c.dim;
  o.stride[3] = 1;
  return o;
}

template <int kTile>
void run_fused(AttentionMath math, const Case& c, const float* q, const float* k, const float* v,
               float* out) {
  AttentionShape shape;
  shape.batch = c.batch, shape.heads = c.heads, shape.queries = c.seq, shape.keys = c.seq;
  shape.head_dim = c.dim, shape.value_dim = c.dim;
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.dim)));
  shape.causal = c.causal;
  CHECK_CUDA(
      (launch_attention_math<kTile>(math, shape, contiguous(q, c), contiguous(k, c),
                                    contiguous(v, c), out, AttentionScoreIdentity{}, nullptr)));
}

void fused(AttentionMath math, const Case& c, const float* q, const float* k, const float* v,
           float* out) {
  if (c.dim <= 32) return run_fused<32>(math, c, q, k, v, out);
  if (c.dim <= 64) return run_fused<64>(math, c, q, k, v, out);
  if (c.dim <= 80) return run_fused<80>(math, c, q, k, v, out);
  return run_fused<128>(math, c, q, k, v, out);
}

// S = scale * Q Kᵀ, P = softmax(S) (causal-masked), O = P V; row-major [bh, seq, dim] operands
// expressed to column-major cuBLAS as their transposes.
void unfused(cublasHandle_t blas, const Case& c, const float* q, const float* k, const float* v,
             float* scores, float* probs, float* out) {
  const int n = static_cast<int>(c.seq), d = static_cast<int>(c.dim);
  const int bh = static_cast<int>(c.batch * c.heads);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.dim)));
  const float zero = 0.0f, one = 1.0f;
  // Sᵀ (col-major n x n) = K (col-major d x n)ᵀ Q: S row-major = Q Kᵀ.
  CHECK_CUBLAS(cublasSgemmStridedBatched(blas, CUBLAS_OP_T, CUBLAS_OP_N, n, n, d, &scale, k, d,
                                         int64_t{n} * d, q, d, int64_t{n} * d, &zero, scores, n,
                                         int64_t{n} * n, bh));
  CHECK_CUDA(launch_softmax(int64_t{bh} * n, n, false, ScoresLoad{scores, n, c.causal},
                            ScoresStore{probs, n}, nullptr));
  // Oᵀ (col-major d x n) = Vᵀ Pᵀ: O row-major = P V.
  CHECK_CUBLAS(cublasSgemmStridedBatched(blas, CUBLAS_OP_N, CUBLAS_OP_N, d, n, n, &one, v, d,
                                         int64_t{n} * d, probs, n, int64_t{n} * n, &zero, out, d,
                                         int64_t{n} * d, bh));
}

template <int kTile>
void prepare() {
  for (AttentionMath math : kMaths)
    CHECK_CUDA(prepare_attention_math<kTile>(math));
}

// max |a - b| / max |b|.
double max_relative(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

}  // namespace

int main() {
  const Case cases[] = {
      {"minigpt_causal_16x12x1024x64", 16, 12, 1024, 64, true},
      {"gpt2_16x12x1024x64", 16, 12, 1024, 64, false},
      {"vit_b16_32x12x197x64", 32, 12, 197, 64, false},
      {"d32_8x16x2048", 8, 16, 2048, 32, true},
      {"d80_ragged_4x8x1000", 4, 8, 1000, 80, false},
      {"d128_causal_4x16x2048", 4, 16, 2048, 128, true},
      {"d128_8x8x512", 8, 8, 512, 128, false},
  };
  prepare<32>();
  prepare<64>();
  prepare<80>();
  prepare<128>();
  cublasHandle_t blas;
  CHECK_CUBLAS(cublasCreate(&blas));
  CHECK_CUBLAS(cublasSetMathMode(blas, CUBLAS_PEDANTIC_MATH));  // strict FP32, as the fp32 track
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, stitch::bench::kFlushBytes));
  std::printf("%-30s %9s", "shape", "cublas ms");
  for (AttentionMath math : kMaths)
    std::printf(" %8s ms %8s", attention_math_name(math), "max rel");
  std::printf("  %-8s %8s %8s\n", "fp32 pick", "speedup", "TFLOP/s");
  for (const Case& c : cases) {
    const size_t operand = static_cast<size_t>(c.batch * c.heads * c.seq * c.dim);
    const size_t square = static_cast<size_t>(c.batch * c.heads * c.seq * c.seq);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> host(3 * operand);
    for (float& x : host)
      x = dist(rng);
    float *q, *k, *v, *out, *ref, *scores, *probs;
    CHECK_CUDA(cudaMalloc(&q, 3 * operand * sizeof(float)));
    k = q + operand, v = k + operand;
    CHECK_CUDA(cudaMemcpy(q, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMalloc(&out, operand * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&ref, operand * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&scores, square * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&probs, square * sizeof(float)));
    unfused(blas, c, q, k, v, scores, probs, ref);
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<float> expected(operand), actual(operand);
    CHECK_CUDA(cudaMemcpy(expected.data(), ref, operand * sizeof(float), cudaMemcpyDeviceToHost));
    const double blas_ms = median_ms([&] { unfused(blas, c, q, k, v, scores, probs, ref); }, flush);
    std::printf("%-30s %9.3f", c.name, blas_ms);
    double fp32_ms[2] = {0, 0};  // fp32_fma, tf32x3
    for (AttentionMath math : kMaths) {
      CHECK_CUDA(cudaMemset(out, 0xff, operand * sizeof(float)));  // NaN: every output written
      fused(math, c, q, k, v, out);
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemcpy(actual.data(), out, operand * sizeof(float), cudaMemcpyDeviceToHost));
      const double ms = median_ms([&] { fused(math, c, q, k, v, out); }, flush);
      if (math == AttentionMath::fp32_fma) fp32_ms[0] = ms;
      if (math == AttentionMath::tf32x3) fp32_ms[1] = ms;
      std::printf(" %11.3f %8.1e", ms, max_relative(actual, expected));
    }
    double pairs = 0;
    for (int64_t i = 0; i < c.seq; ++i)
      pairs += static_cast<double>(c.causal ? std::min(i + 1, c.seq) : c.seq);
    const double flops = 4.0 * static_cast<double>(c.batch * c.heads * c.dim) * pairs;
    const bool split = fp32_ms[1] < fp32_ms[0];
    const double pick_ms = split ? fp32_ms[1] : fp32_ms[0];
    std::printf("  %-8s %7.2fx %8.1f\n", split ? "tf32x3" : "fp32_fma", blas_ms / pick_ms,
                flops / (pick_ms * 1e-3) / 1e12);
    CHECK_CUDA(cudaFree(q));
    CHECK_CUDA(cudaFree(out));
    CHECK_CUDA(cudaFree(ref));
    CHECK_CUDA(cudaFree(scores));
    CHECK_CUDA(cudaFree(probs));
  }
  CHECK_CUDA(cudaFree(flush));
  CHECK_CUBLAS(cublasDestroy(blas));
  return 0;
}
