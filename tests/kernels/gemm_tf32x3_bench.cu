// Bench of kernels/gemm_tf32x3.cuh (GemmTf32x3: its wgmma kernel where it can run, "wgmma", and its
// mma.sync kernel, "mma") against Tf32x3Matmul (split copies, B prepared once, tuned, "lt3x") and
// strict FP32 cuBLASLt (tuned, "strict"), on KernelBench level-2 GEMM shapes and big squares, with
// plain TF32 cuBLASLt (one TF32 product per term, "tf32": not FP32-accurate, the ceiling a
// tensor-core GEMM reaches on the shape; its % floor is against a third of the 3xTF32 floor, the
// share of the TF32 peak where the shape is compute-bound). Not
// a test: built on demand (target gemm_tf32x3_bench, sm_90a) and run on a GPU by hand:
//   gemm_tf32x3_bench            every shape, every method
//   gemm_tf32x3_bench --quick    the first shape only
//   gemm_tf32x3_bench --fused    GemmTf32x3's kernels only, then the median % of floor of the
//                                level-2 shapes per kernel (the issue's >= 80% target)
//   gemm_tf32x3_bench --chunks   also the wgmma kernel with 8 and 16 K tiles per chunk sum
//   gemm_tf32x3_bench --only S   the shapes whose name holds S (repeatable)
// (flags combine).
//
// For each shape and method: the output poisoned with NaN, one run, every output element checked
// finite, sampled rows x columns checked against a double CPU reference (relative error norm and
// max |error| / max |reference|); then timed with CUDA events, L2 flushed before each run, the
// median of kIterations after warm-ups. % floor: the roofline floor (3 x 2mnk at the TF32 dense
// peak, or reading A and B and writing D at the DRAM bandwidth, the larger) over the time.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "bench_support.cuh"
#include "kernels/gemm_tf32x3.cuh"
#include "kernels/matmul.cuh"
#include "kernels/matmul_tf32x3.cuh"

namespace {

using namespace stitch::kernels;

constexpr double kTf32PeakTflops = 494.7;  // src/util/gpu_peaks.cc, H200 dense TF32
constexpr double kDramGbps = 4800.0;
constexpr int kIterations = 15, kWarmups = 2;
constexpr size_t kWorkspaceBytes = 32u << 20;
using stitch::bench::kFlushBytes;

__global__ void fill_uniform(float* x, int64_t n, uint64_t seed, float low, float high) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    uint64_t z = seed * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(i) + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    x[i] = low + (high - low) * static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
  }
}

__global__ void count_non_finite(const float* x, int64_t n, unsigned long long* count) {
  unsigned long long local = 0;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    local += isfinite(x[i]) ? 0 : 1;
  if (local) atomicAdd(count, local);
}

struct Shape {
  const char* name;
  int64_t m, n, k;
  bool trans_b;
  MatmulEpilogue epilogue;
  bool positive;  // same-signed operands (stress the accumulation); else signed
};

struct Outcome {
  double ms = -1, rel_norm = -1, max_rel = -1;
  unsigned long long non_finite = 0;
  std::string describe;
};

double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

struct Problem {
  Shape s;
  float *a = nullptr, *b = nullptr, *bias = nullptr, *d = nullptr;
  std::vector<int64_t> rows, cols;
  std::vector<float> a_rows, b_cols, bias_host;  // sampled operands
  std::vector<double> expected;                  // rows x cols
};

std::vector<int64_t> sample(int64_t extent, int64_t count) {
  std::vector<int64_t> out;
  if (extent <= count) {
    for (int64_t i = 0; i < extent; ++i)
      out.push_back(i);
    return out;
  }
  for (int64_t i = 0; i < count; ++i)
    out.push_back(i * (extent - 1) / (count - 1));
  return out;
}

void prepare(Problem& p) {
  const Shape& s = p.s;
  CHECK_CUDA(cudaMalloc(&p.a, s.m * s.k * 4));
  CHECK_CUDA(cudaMalloc(&p.b, s.k * s.n * 4));
  CHECK_CUDA(cudaMalloc(&p.bias, s.n * 4));
  CHECK_CUDA(cudaMalloc(&p.d, s.m * s.n * 4));
  const float scale_b = 1.0f / std::sqrt(static_cast<float>(s.k));
  fill_uniform<<<1024, 256>>>(p.a, s.m * s.k, 1, s.positive ? 0.0f : -1.0f, 1.0f);
  fill_uniform<<<1024, 256>>>(p.b, s.k * s.n, 2, s.positive ? 0.0f : -scale_b, scale_b);
  fill_uniform<<<64, 256>>>(p.bias, s.n, 3, -1.0f, 1.0f);
  CHECK_CUDA(cudaDeviceSynchronize());
  p.rows = sample(s.m, 24);
  p.cols = sample(s.n, 256);
  p.a_rows.resize(p.rows.size() * s.k);
  for (size_t i = 0; i < p.rows.size(); ++i)
    CHECK_CUDA(
        cudaMemcpy(&p.a_rows[i * s.k], p.a + p.rows[i] * s.k, s.k * 4, cudaMemcpyDeviceToHost));
  p.b_cols.resize(p.cols.size() * s.k);
  for (size_t j = 0; j < p.cols.size(); ++j) {
    if (s.trans_b)
      CHECK_CUDA(
          cudaMemcpy(&p.b_cols[j * s.k], p.b + p.cols[j] * s.k, s.k * 4, cudaMemcpyDeviceToHost));
    else
      CHECK_CUDA(cudaMemcpy2D(&p.b_cols[j * s.k], 4, p.b + p.cols[j], s.n * 4, 4, s.k,
                              cudaMemcpyDeviceToHost));
  }
  p.bias_host.resize(s.n);
  CHECK_CUDA(cudaMemcpy(p.bias_host.data(), p.bias, s.n * 4, cudaMemcpyDeviceToHost));
  p.expected.resize(p.rows.size() * p.cols.size());
  for (size_t i = 0; i < p.rows.size(); ++i)
    for (size_t j = 0; j < p.cols.size(); ++j) {
      double sum = 0;
      const float* x = &p.a_rows[i * s.k];
      const float* y = &p.b_cols[j * s.k];
      for (int64_t q = 0; q < s.k; ++q)
        sum += double(x[q]) * double(y[q]);
      if (epilogue_has_bias(s.epilogue)) sum += p.bias_host[p.cols[j]];
      if (s.epilogue == MatmulEpilogue::relu || s.epilogue == MatmulEpilogue::bias_relu)
        sum = std::max(sum, 0.0);
      if (s.epilogue == MatmulEpilogue::gelu || s.epilogue == MatmulEpilogue::bias_gelu)
        sum = gelu_tanh(sum);
      p.expected[i * p.cols.size() + j] = sum;
    }
}

void release(Problem& p) {
  cudaFree(p.a);
  cudaFree(p.b);
  cudaFree(p.bias);
  cudaFree(p.d);
}

// cuBLASLt with TF32 tensor cores: the same GEMM as LtMatmul with fast_tf32 compute.
struct LtTf32Matmul : LtMatmul {
  int init(cublasLtHandle_t handle, const MatmulShape& shape, MatmulEpilogue epilogue,
           bool accumulate_c, void* workspace, size_t workspace_bytes, std::string& error) {
    return init_with_compute(handle, shape, epilogue, accumulate_c, workspace, workspace_bytes,
                             error, 16, Compute::fast_tf32);
  }
};

template <class Mm>
bool prepared(Mm& mm, const float* b, bool prepare_b, std::string& error) {
  if constexpr (std::is_base_of_v<LtMatmul, Mm>)
    return !prepare_b;
  else
    return !prepare_b || mm.prepare_b(b, nullptr, error) == STITCH_OK;
}

template <class Mm>
void set_engine(Mm& mm, GemmTf32x3::Engine engine) {
  if constexpr (std::is_same_v<Mm, GemmTf32x3>)
    mm.set_engine(engine);
  else
    (void)mm, (void)engine;
}

template <class Mm>
Outcome measure(Problem& p, cublasLtHandle_t lt, void* workspace, void* flush, bool prepare_b,
                GemmTf32x3::Engine engine = GemmTf32x3::Engine::automatic, int chunk_tiles = 0) {
  const Shape& s = p.s;
  MatmulShape shape;
  shape.m = s.m, shape.n = s.n, shape.k = s.k;
  shape.lda = s.k, shape.ldb = s.trans_b ? s.k : s.n, shape.ldc = s.n;
  shape.trans_b = s.trans_b;
  Outcome out;
  std::string error;
  Mm mm;
  set_engine(mm, engine);
  if constexpr (std::is_same_v<Mm, GemmTf32x3>)
    if (chunk_tiles > 0) mm.set_chunk_tiles(chunk_tiles);
  if (mm.init(lt, shape, s.epilogue, false, workspace, kWorkspaceBytes, error) != STITCH_OK ||
      mm.tune(p.a, p.b, p.d, p.bias, nullptr, error) != STITCH_OK ||
      !prepared(mm, p.b, prepare_b, error)) {
    out.describe = "init failed: " + error;
    return out;
  }
  out.describe = mm.describe();
  const float* b = prepare_b ? nullptr : p.b;
  auto run = [&] {
    if (mm.run(p.a, b, nullptr, p.d, p.bias, 1.0f, 0.0f, nullptr, error) != STITCH_OK) {
      std::printf("run failed: %s\n", error.c_str());
      std::exit(1);
    }
  };
  CHECK_CUDA(cudaMemset(p.d, 0xFF, s.m * s.n * 4));  // NaN
  run();
  CHECK_CUDA(cudaDeviceSynchronize());
  unsigned long long* count = nullptr;
  CHECK_CUDA(cudaMalloc(&count, sizeof(*count)));
  CHECK_CUDA(cudaMemset(count, 0, sizeof(*count)));
  count_non_finite<<<1024, 256>>>(p.d, s.m * s.n, count);
  CHECK_CUDA(cudaMemcpy(&out.non_finite, count, sizeof(*count), cudaMemcpyDeviceToHost));
  cudaFree(count);
  double diff = 0, norm = 0, max_err = 0, max_ref = 0;
  std::vector<float> row(s.n);
  for (size_t i = 0; i < p.rows.size(); ++i) {
    CHECK_CUDA(cudaMemcpy(row.data(), p.d + p.rows[i] * s.n, s.n * 4, cudaMemcpyDeviceToHost));
    for (size_t j = 0; j < p.cols.size(); ++j) {
      const double ref = p.expected[i * p.cols.size() + j], got = row[p.cols[j]];
      diff += (got - ref) * (got - ref);
      norm += ref * ref;
      max_err = std::max(max_err, std::fabs(got - ref));
      max_ref = std::max(max_ref, std::fabs(ref));
    }
  }
  out.rel_norm = std::sqrt(diff / std::max(norm, 1e-300));
  out.max_rel = max_err / std::max(max_ref, 1e-300);
  out.ms = stitch::bench::median_ms(run, flush, kWarmups, kIterations);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, fused = false, chunks = false;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    quick |= flag == "--quick", fused |= flag == "--fused", chunks |= flag == "--chunks";
    if (flag == "--only" && i + 1 < argc) only.push_back(argv[++i]);
  }
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  std::string probe_error;
  const bool wgmma = gemm_tf32x3_wgmma_available(probe_error);
  std::printf("wgmma kernel: %s %s\n", wgmma ? "available" : "not available", probe_error.c_str());
  cublasLtHandle_t lt = nullptr;
  cublasLtCreate(&lt);
  void *workspace = nullptr, *flush = nullptr;
  CHECK_CUDA(cudaMalloc(&workspace, kWorkspaceBytes));
  CHECK_CUDA(cudaMalloc(&flush, kFlushBytes));
  using E = MatmulEpilogue;
  // level2: counted in the median % of floor --fused prints.
  struct Row {
    Shape s;
    bool level2;
  };
  std::vector<Row> rows = {
      {{"L2 1024x8192->8192 (12,14,...)", 1024, 8192, 8192, true, E::bias, false}, true},
      {{"L2 2048x8192->8192 (53)", 2048, 8192, 8192, true, E::bias, false}, true},
      {{"L2 16384x4096->4096 (39,41)", 16384, 4096, 4096, true, E::bias, false}, true},
      {{"L2 16384x2048->4096 (45)", 16384, 4096, 2048, true, E::bias, false}, true},
      {{"L2 32768x1024->4096 (37)", 32768, 4096, 1024, true, E::bias, false}, true},
      {{"L2 128x16384->16384 (66)", 128, 16384, 16384, true, E::bias, false}, true},
      {{"L2 128x32768->32768 (55,56,59)", 128, 32768, 32768, true, E::bias, false}, true},
      {{"square 4096 B [k,n]", 4096, 4096, 4096, false, E::none, false}, false},
      {{"square 8192 weight", 8192, 8192, 8192, true, E::bias_gelu, false}, false},
      {{"1024x8192->8192 same-signed", 1024, 8192, 8192, true, E::none, true}, false},
      {{"split-K 256x1024<-8192 relu", 256, 1024, 8192, true, E::relu, false}, false},
      {{"odd 1000x1000<-3001 [k,n]", 1000, 1000, 3001, false, E::bias_gelu, false}, false},
      // A 1x1 convolution's GEMM per image, short K (EfficientNet's MBConv expansion at 224x224):
      // output-bound, where the tiles' epilogues and start-ups dominate.
      {{"1x1 conv 672x50176<-112 [k,n]", 672, 50176, 112, false, E::none, false}, false},
  };
  if (quick) rows.resize(1);
  if (!only.empty()) {
    const auto unwanted = [&](const Row& row) {
      return std::none_of(only.begin(), only.end(), [&](const std::string& part) {
        return std::string(row.s.name).find(part) != std::string::npos;
      });
    };
    rows.erase(std::remove_if(rows.begin(), rows.end(), unwanted), rows.end());
  }
  std::printf("%-34s %-8s %9s %8s %8s %10s %10s %5s\n", "shape", "method", "ms", "TFLOP/s",
              "%floor", "rel_norm", "max_rel", "nan");
  std::vector<double> floor_share[2];  // level-2 % of floor: [0] wgmma, [1] mma.sync
  for (const Row& row : rows) {
    const Shape& s = row.s;
    Problem p;
    p.s = s;
    prepare(p);
    const double flops = 2.0 * s.m * s.n * s.k;
    const double floor_ms =
        std::max(3 * flops / (kTf32PeakTflops * 1e12),
                 4.0 * (s.m * s.k + s.k * s.n + s.m * s.n) / (kDramGbps * 1e9)) *
        1e3;
    struct Method {
      const char* name;
      Outcome outcome;
    };
    std::vector<Method> methods;
    if (wgmma) {
      methods.push_back(
          {"wgmma", measure<GemmTf32x3>(p, lt, workspace, flush, true, GemmTf32x3::Engine::wgmma)});
      if (chunks)
        for (int tiles : {8, 16})
          methods.push_back({tiles == 8 ? "wgmma_c8" : "wgmma_c16",
                             measure<GemmTf32x3>(p, lt, workspace, flush, true,
                                                 GemmTf32x3::Engine::wgmma, tiles)});
    }
    methods.push_back(
        {"mma", measure<GemmTf32x3>(p, lt, workspace, flush, true, GemmTf32x3::Engine::mma_sync)});
    if (!fused) {
      methods.push_back({"lt3x", measure<Tf32x3Matmul>(p, lt, workspace, flush, true)});
      methods.push_back({"strict", measure<LtMatmul>(p, lt, workspace, flush, false)});
      methods.push_back({"tf32", measure<LtTf32Matmul>(p, lt, workspace, flush, false)});
    }
    for (const Method& m : methods) {
      const Outcome& o = m.outcome;
      const double products = std::string(m.name) == "tf32" ? 1.0 : 3.0;
      const double share = 100.0 * floor_ms * (products / 3.0) / o.ms;
      std::printf("%-34s %-8s %9.4f %8.1f %7.1f%% %10.3g %10.3g %5llu  %s\n", s.name, m.name, o.ms,
                  flops / (o.ms * 1e9), share, o.rel_norm, o.max_rel, o.non_finite,
                  o.describe.c_str());
      if (row.level2 && o.ms > 0) {
        if (std::string(m.name) == "wgmma") floor_share[0].push_back(share);
        if (std::string(m.name) == "mma") floor_share[1].push_back(share);
      }
    }
    std::printf("%-34s floor %.4f ms\n", s.name, floor_ms);
    std::fflush(stdout);
    release(p);
  }
  const char* kernel_names[2] = {"wgmma", "mma.sync"};
  for (int i = 0; i < 2; ++i) {
    std::vector<double>& v = floor_share[i];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    std::printf("GemmTf32x3 %s kernel: median %.1f%% of the 3xTF32 floor over %zu level-2 shapes\n",
                kernel_names[i], v[v.size() / 2], v.size());
  }
  cublasLtDestroy(lt);
  return 0;
}
