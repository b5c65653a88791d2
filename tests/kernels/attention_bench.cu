// Bench of kernels/attention.cuh (the fused flash-style kernel, FP32 FMA) against the unfused
// baseline a program would run without it: cuBLAS strict-FP32 batched GEMM for Q Kᵀ (scale in
// alpha), kernels/row.cuh's softmax (a causal mask in its load functor), cuBLAS for P V. Shapes of
// GPT-2 / MiniGPT blocks, a ViT, head dims 32-128 and a ragged length. Not a test: built on demand
// (target attention_bench) and run on a GPU by hand; its "eff" column (the fused kernel's FLOP/s
// over the FP32 peak, causal FLOPs counted as visited) is what the planner's attention efficiency
// guess (src/plan/kernel_choice.h) should be replaced with.
//
// Per shape: both outputs compared (max |difference| / max |value|), then each timed with CUDA
// events, L2 flushed before every run, the median of kIterations after warm-ups.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/attention.cuh"
#include "kernels/row.cuh"

namespace {

using namespace stitch::kernels;

constexpr double kFp32Tflops = 67.0;  // src/util/gpu_peaks.cc, H200
constexpr int kIterations = 20, kWarmups = 3;
constexpr size_t kFlushBytes = 256u << 20;

#define CHECK_CUDA(x)                                                                      \
  do {                                                                                     \
    cudaError_t e_ = static_cast<cudaError_t>(x);                                          \
    if (e_ != cudaSuccess) {                                                               \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)
#define CHECK_CUBLAS(x)                                                        \
  do {                                                                         \
    cublasStatus_t s_ = (x);                                                   \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                         \
      std::printf("cuBLAS error %d at %s:%d\n", s_, __FILE__, __LINE__);       \
      std::exit(1);                                                            \
    }                                                                          \
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

template <class Run>
double median_ms(Run run, void* flush) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int i = 0; i < kWarmups + kIterations; ++i) {
    CHECK_CUDA(cudaMemsetAsync(flush, i, kFlushBytes));
    CHECK_CUDA(cudaEventRecord(start));
    run();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (i >= kWarmups) times.push_back(ms);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

AttentionOperand contiguous(const float* data, const Case& c) {
  AttentionOperand o;
  o.data = data;
  o.stride[0] = c.heads * c.seq * c.dim, o.stride[1] = c.seq * c.dim, o.stride[2] = c.dim;
  o.stride[3] = 1;
  return o;
}

template <int kTile>
void run_fused(const Case& c, const float* q, const float* k, const float* v, float* out) {
  AttentionShape shape;
  shape.batch = c.batch, shape.heads = c.heads, shape.queries = c.seq, shape.keys = c.seq;
  shape.head_dim = c.dim, shape.value_dim = c.dim;
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.dim)));
  shape.causal = c.causal;
  CHECK_CUDA((launch_attention<kTile>(shape, contiguous(q, c), contiguous(k, c), contiguous(v, c),
                                      out, AttentionScoreIdentity{}, nullptr)));
}

void fused(const Case& c, const float* q, const float* k, const float* v, float* out) {
  if (c.dim <= 32) return run_fused<32>(c, q, k, v, out);
  if (c.dim <= 64) return run_fused<64>(c, q, k, v, out);
  if (c.dim <= 80) return run_fused<80>(c, q, k, v, out);
  return run_fused<128>(c, q, k, v, out);
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
  CHECK_CUDA(prepare_attention<kTile>());
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
  CHECK_CUDA(cudaMalloc(&flush, kFlushBytes));
  std::printf("%-30s %10s %10s %8s %8s %10s\n", "shape", "fused ms", "cublas ms", "speedup",
              "eff", "max rel");
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
    fused(c, q, k, v, out);
    unfused(blas, c, q, k, v, scores, probs, ref);
    CHECK_CUDA(cudaDeviceSynchronize());
    std::vector<float> a(operand), b(operand);
    CHECK_CUDA(cudaMemcpy(a.data(), out, operand * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(b.data(), ref, operand * sizeof(float), cudaMemcpyDeviceToHost));
    double diff = 0, scale = 0;
    for (size_t i = 0; i < operand; ++i) {
      diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    }
    const double fused_ms = median_ms([&] { fused(c, q, k, v, out); }, flush);
    const double blas_ms =
        median_ms([&] { unfused(blas, c, q, k, v, scores, probs, ref); }, flush);
    double pairs = 0;
    for (int64_t i = 0; i < c.seq; ++i)
      pairs += static_cast<double>(c.causal ? std::min(i + 1, c.seq) : c.seq);
    const double flops = 4.0 * static_cast<double>(c.batch * c.heads * c.dim) * pairs;
    std::printf("%-30s %10.3f %10.3f %7.2fx %8.3f %10.2e\n", c.name, fused_ms, blas_ms,
                blas_ms / fused_ms, flops / (fused_ms * 1e-3) / (kFp32Tflops * 1e12),
                scale > 0 ? diff / scale : diff);
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
