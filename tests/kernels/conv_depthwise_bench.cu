// Bench of kernels/conv_depthwise.cuh (launch_depthwise_conv2d: the tiled kernel, or the simple
// one where the plan falls back) against its simple kernel (a thread per output, the previous
// kernel) and cuDNN's tuned engine (kernels/conv.cuh, strict FP32, as the fp32 track runs it) on
// EfficientNet's MBConv block, MobileNetV2 / EfficientNet-B0 depthwise shapes, a 1-d one and a
// large window. Not a test: built on demand (target conv_depthwise_bench) and run on a GPU by
// hand; its table is what the planner's efficiencies (kDepthwiseKernelMemory,
// kCudnnDepthwiseMemory, ... in src/plan/kernel_choice.h) come from.
//
// Per shape: the outputs compared with cuDNN's (max |difference| / max |value|), then each engine
// timed with CUDA events, L2 flushed before every run, the median of kIterations after warm-ups.
// "eff": the bytes of x, w and y over the time, as a fraction of kDramGbps. "plan": the path the
// launcher takes (fixed / any window, simple) and its tile (rows x columns, threads).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_support.cuh"
#include "kernels/conv.cuh"
#include "kernels/conv_depthwise.cuh"

namespace {

using namespace stitch::kernels;

constexpr double kDramGbps = 4800.0;  // src/util/gpu_peaks.cc, H200
constexpr int kIterations = 20, kWarmups = 3;
constexpr size_t kWorkspaceBytes = 64u << 20;

// bench_support.cuh's median at this bench's warm-ups and iterations.
template <class Run>
double median_ms(Run run, void* flush) {
  return stitch::bench::median_ms(run, flush, kWarmups, kIterations);
}

struct Case {
  const char* name;
  int64_t batch, channels, multiplier, h, w, k, stride;  // h == 1, k_h == 1: a 1-d convolution
};

DepthwiseConv2dShape depthwise_shape(const Case& c) {
  DepthwiseConv2dShape s;
  const bool one_d = c.h == 1;
  s.batch = c.batch, s.channels = c.channels, s.multiplier = c.multiplier;
  s.in_h = c.h, s.in_w = c.w, s.kernel_h = one_d ? 1 : c.k, s.kernel_w = c.k;
  s.stride_h = one_d ? 1 : c.stride, s.stride_w = c.stride;
  s.pad_top = s.pad_bottom = one_d ? 0 : c.k / 2;
  s.pad_left = s.pad_right = c.k / 2;
  s.out_h = (s.in_h + 2 * s.pad_top - s.kernel_h) / s.stride_h + 1;
  s.out_w = (s.in_w + 2 * s.pad_left - s.kernel_w) / s.stride_w + 1;
  return s;
}

ConvShape cudnn_shape(const DepthwiseConv2dShape& d) {
  ConvShape s;
  s.spatial = 2, s.batch = d.batch, s.groups = d.channels;
  s.in_channels = d.channels, s.out_channels = d.channels * d.multiplier;
  s.input[0] = d.in_h, s.input[1] = d.in_w, s.output[0] = d.out_h, s.output[1] = d.out_w;
  s.kernel[0] = d.kernel_h, s.kernel[1] = d.kernel_w;
  s.stride[0] = d.stride_h, s.stride[1] = d.stride_w;
  s.pad_before[0] = d.pad_top, s.pad_before[1] = d.pad_left;
  s.pad_after[0] = d.pad_bottom, s.pad_after[1] = d.pad_right;
  s.alignment = 16;
  return s;
}

float* device_random(size_t count, unsigned seed) {
  std::vector<float> host(count);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : host)
    v = dist(rng);
  float* data = nullptr;
  CHECK_CUDA(cudaMalloc(&data, count * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(data, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  return data;
}

// "fixed 16x112 t224": the launcher's path, its tile (output rows x columns) and threads.
std::string plan_text(const DepthwiseConv2dShape& d, const float* x) {
  const detail::DepthwisePlan plan =
      detail::plan_depthwise_conv2d(d, reinterpret_cast<uintptr_t>(x) % 16 == 0, 256);
  if (plan.path == detail::DepthwisePath::simple) return "simple";
  const detail::DepthwiseTiling& t = plan.params.tiling;
  char text[64];
  std::snprintf(text, sizeof text, "%s %dx%d t%d%s",
                plan.path == detail::DepthwisePath::fixed_window ? "fixed" : "any", t.tile_h,
                t.tile_w, t.threads, t.vector_loads ? " v4" : "");
  return text;
}

void bench(const Case& c, CudnnHandle& cudnn, void* workspace, void* flush) {
  const DepthwiseConv2dShape d = depthwise_shape(c);
  const ConvShape shape = cudnn_shape(d);
  const size_t xs = d.batch * d.channels * d.in_h * d.in_w;
  const size_t ws = d.channels * d.multiplier * d.kernel_h * d.kernel_w;
  const size_t ys = d.batch * d.channels * d.multiplier * d.out_h * d.out_w;
  float* x = device_random(xs, 1);
  float* w = device_random(ws, 2);
  float *y_own = nullptr, *y_simple = nullptr, *y_cudnn = nullptr;
  CHECK_CUDA(cudaMalloc(&y_own, ys * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y_simple, ys * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y_cudnn, ys * sizeof(float)));
  std::string error;
  CudnnConv conv;
  if (conv.init(cudnn.get(), shape, ConvMath::strict_fp32, kWorkspaceBytes, error) != STITCH_OK ||
      tune_conv_on_scratch(conv, shape, workspace, nullptr, error) != STITCH_OK) {
    std::printf("%-28s cuDNN: %s\n", c.name, error.c_str());
    return;
  }
  CHECK_CUDA(launch_depthwise_conv2d(x, w, y_own, d, nullptr));
  CHECK_CUDA(detail::launch_depthwise_conv2d_simple(x, w, y_simple, d, nullptr, 256));
  if (conv.run(x, w, y_cudnn, workspace, nullptr, error) != STITCH_OK) {
    std::printf("%-28s cuDNN run: %s\n", c.name, error.c_str());
    return;
  }
  std::vector<float> a(ys), b(ys), simple(ys);
  CHECK_CUDA(cudaMemcpy(a.data(), y_own, ys * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(b.data(), y_cudnn, ys * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(simple.data(), y_simple, ys * sizeof(float), cudaMemcpyDeviceToHost));
  double diff = 0, scale = 0;
  size_t unlike_simple = 0;  // the same window-order sums: equal but for the sign of a zero
  for (size_t i = 0; i < ys; ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    unlike_simple += !(a[i] == simple[i]);
  }
  const double own_ms =
      median_ms([&] { CHECK_CUDA(launch_depthwise_conv2d(x, w, y_own, d, nullptr)); }, flush);
  const double simple_ms = median_ms(
      [&] { CHECK_CUDA(detail::launch_depthwise_conv2d_simple(x, w, y_simple, d, nullptr, 256)); },
      flush);
  const double cudnn_ms = median_ms(
      [&] {
        if (conv.run(x, w, y_cudnn, workspace, nullptr, error) != STITCH_OK) std::exit(1);
      },
      flush);
  const double bytes = 4.0 * static_cast<double>(xs + ws + ys);
  auto efficiency = [&](double ms) { return bytes / (ms * 1e-3) / (kDramGbps * 1e9); };
  std::printf("%-28s %9.1f %9.1f %9.1f %7.2fx %6.2f %6.2f %6.2f %9.1e %s%s\n", c.name, own_ms * 1e3,
              simple_ms * 1e3, cudnn_ms * 1e3, cudnn_ms / own_ms, efficiency(own_ms),
              efficiency(simple_ms), efficiency(cudnn_ms), scale > 0 ? diff / scale : diff,
              plan_text(d, x).c_str(), unlike_simple ? " UNLIKE THE SIMPLE KERNEL" : "");
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(w));
  CHECK_CUDA(cudaFree(y_own));
  CHECK_CUDA(cudaFree(y_simple));
  CHECK_CUDA(cudaFree(y_cudnn));
}

}  // namespace

int main() {
  const Case cases[] = {
      // EfficientNet's MBConv block (KernelBench level 3, 21): 672 hidden channels, 5x5 stride 2.
      {"mbconv_672x224x224_k5_s2", 10, 672, 1, 224, 224, 5, 2},
      // MobileNetV2 (batch 10 as KernelBench level 3; 224 x 224 input): 3x3, stride 1 and 2.
      {"mbv2_32x112x112_s1", 10, 32, 1, 112, 112, 3, 1},
      {"mbv2_96x112x112_s2", 10, 96, 1, 112, 112, 3, 2},
      {"mbv2_144x56x56_s1", 10, 144, 1, 56, 56, 3, 1},
      {"mbv2_192x28x28_s1", 10, 192, 1, 28, 28, 3, 1},
      {"mbv2_576x14x14_s1", 10, 576, 1, 14, 14, 3, 1},
      {"mbv2_960x7x7_s1", 10, 960, 1, 7, 7, 3, 1},
      // EfficientNet-B0: 5x5 stages, and a channel multiplier of 2 (KernelBench level 1).
      {"effb0_144x56x56_k5_s2", 10, 144, 1, 56, 56, 5, 2},
      {"effb0_240x28x28_k5", 10, 240, 1, 28, 28, 5, 1},
      {"effb0_672x14x14_k5_s2", 10, 672, 1, 14, 14, 5, 2},
      {"effb0_1152x7x7_k5", 10, 1152, 1, 7, 7, 5, 1},
      {"kb_l1_mult2_64x256x256", 16, 64, 2, 256, 256, 3, 1},
      {"conv1d_64x4096_k5", 16, 64, 1, 1, 4096, 5, 1},
      {"large_window_64x64x64_k31", 8, 64, 1, 64, 64, 31, 1},
  };
  CudnnHandle cudnn;
  std::string error;
  if (cudnn.create(error) != STITCH_OK) {
    std::printf("cuDNN: %s\n", error.c_str());
    return 1;
  }
  void *workspace = nullptr, *flush = nullptr;
  CHECK_CUDA(cudaMalloc(&workspace, kWorkspaceBytes));
  CHECK_CUDA(cudaMalloc(&flush, stitch::bench::kFlushBytes));
  std::printf("%-28s %9s %9s %9s %8s %6s %6s %6s %9s %s\n", "shape", "own us", "simple us",
              "cuDNN us", "vs cuDNN", "own e", "simp e", "cuDNN e", "max diff", "plan");
  for (const Case& c : cases)
    bench(c, cudnn, workspace, flush);
  return 0;
}
