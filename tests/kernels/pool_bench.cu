// Bench of kernels/pooling.cuh's max and average pools over NCHW planes: the tiled path (the
// window's size read from the shape, and given at compile time) and the max pools' strip path
// beside the per-element one, on SqueezeNet's three 3x3 stride-2 max pools, GoogleNet's 3x3
// stride-1 one, VGG's 2x2 and a 3x3 average pool. Not a test: built on demand (target pool_bench)
// and run on a GPU by hand.
//
// Per shape: each path's output held to the per-element path's, bit for bit (the same windows and
// comparison order), then each timed with CUDA events, L2 flushed before every run, the median of
// kIterations after warm-ups; "GB/s": x read once and y written once over the time (the DRAM
// floor's traffic), to hold against the GPU's peak.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "bench_support.cuh"
#include "kernels/pooling.cuh"

namespace {

using namespace stitch::kernels;

constexpr int kIterations = 20, kWarmups = 3;

// bench_support.cuh's median at this bench's warm-ups and iterations.
template <class Run>
double median_ms(Run run, void* flush) {
  return stitch::bench::median_ms(run, flush, kWarmups, kIterations);
}

// Addressed as a generated program's load functor is: a sum of stride products.
struct Load {
  const float* x;
  int64_t h, w;
  __device__ float operator()(int64_t o, int64_t, int64_t ih, int64_t iw) const {
    return x[o * (h * w) + ih * w + iw];
  }
};

struct Store {
  float* y;
  __device__ void operator()(int64_t e, float value, int64_t) const { y[e] = value; }
};
// Declared to ignore the index, as a generated program's store is where no one reads it: a max
// pool with its window's size at compile time then takes the strip path.
struct ValueStore : Store {
  static constexpr bool kStoresIndex = false;
};

struct Case {
  const char* name;
  bool max;
  int64_t planes, in, out, kernel, stride, pad;
};

PoolShape pool_shape(const Case& c) {
  PoolShape s;
  s.outer = c.planes;
  s.in[1] = s.in[2] = c.in;
  s.out[1] = s.out[2] = c.out;
  s.kernel[1] = s.kernel[2] = c.kernel;
  s.stride[1] = s.stride[2] = c.stride;
  s.pad[1] = s.pad[2] = c.pad;
  return s;
}

template <PoolKind Kind>
void bench(const Case& c, void* flush) {
  const PoolShape s = pool_shape(c);
  const detail::PoolTilePlan plan = detail::plan_pool_tile(Kind, s);
  const size_t xs = static_cast<size_t>(c.planes * c.in * c.in);
  const size_t ys = static_cast<size_t>(c.planes * c.out * c.out);
  std::vector<float> host(xs);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : host)
    v = dist(rng);
  float *x = nullptr, *y_want = nullptr, *y = nullptr;
  CHECK_CUDA(cudaMalloc(&x, xs * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y_want, ys * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&y, ys * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(x, host.data(), xs * sizeof(float), cudaMemcpyHostToDevice));
  const Load load{x, c.in, c.in};
  CHECK_CUDA(launch_pool<Kind>(s, load, Store{y_want}, nullptr, 256, false));
  std::vector<float> want(ys), got(ys);
  CHECK_CUDA(cudaMemcpy(want.data(), y_want, ys * sizeof(float), cudaMemcpyDeviceToHost));
  const double gb = static_cast<double>(xs + ys) * sizeof(float) / 1e9;
  std::printf("%-26s tile %lldx%lld", c.name, static_cast<long long>(plan.rows),
              static_cast<long long>(plan.cols));
  auto column = [&](const std::string& name, auto run) {
    CHECK_CUDA(cudaMemset(y, 0xff, ys * sizeof(float)));
    CHECK_CUDA(run());
    CHECK_CUDA(cudaMemcpy(got.data(), y, ys * sizeof(float), cudaMemcpyDeviceToHost));
    const bool same = std::memcmp(want.data(), got.data(), ys * sizeof(float)) == 0;
    const double ms = median_ms([&] { CHECK_CUDA(run()); }, flush);
    std::printf("  %s %8.1f us %6.0f GB/s%s", name.c_str(), ms * 1e3, gb / (ms * 1e-3),
                same ? "" : " DIFFERS");
  };
  if (plan.eligible) {
    column("tiled", [&] { return launch_pool<Kind>(s, load, Store{y}, nullptr, 256, true); });
    // The window's size at compile time, as generated programs give it: its loops unroll.
    if (c.kernel == 3)
      column("unrolled",
             [&] { return launch_pool<Kind, 3, 3>(s, load, Store{y}, nullptr, 256, true); });
    if (c.kernel == 2)
      column("unrolled",
             [&] { return launch_pool<Kind, 2, 2>(s, load, Store{y}, nullptr, 256, true); });
  }
  if (Kind == PoolKind::max && detail::strip_eligible(s)) {
    if (c.kernel == 3)
      column("strips",
             [&] { return launch_pool<Kind, 3, 3>(s, load, ValueStore{{y}}, nullptr, 256, true); });
    if (c.kernel == 2)
      column("strips",
             [&] { return launch_pool<Kind, 2, 2>(s, load, ValueStore{{y}}, nullptr, 256, true); });
  }
  column("element", [&] { return launch_pool<Kind>(s, load, Store{y}, nullptr, 256, false); });
  std::printf("\n");
  CHECK_CUDA(cudaFree(x));
  CHECK_CUDA(cudaFree(y_want));
  CHECK_CUDA(cudaFree(y));
}

}  // namespace

int main() {
  cudaDeviceProp props{};
  CHECK_CUDA(cudaGetDeviceProperties(&props, 0));
  std::printf("pool_bench on %s\n", props.name);
  void* flush = nullptr;
  CHECK_CUDA(cudaMalloc(&flush, stitch::bench::kFlushBytes));
  const Case cases[] = {
      {"squeezenet_pool1_3x3s2", true, 64 * 96, 253, 126, 3, 2, 0},
      {"squeezenet_pool2_3x3s2", true, 64 * 256, 126, 63, 3, 2, 0},
      {"squeezenet_pool3_3x3s2", true, 64 * 512, 63, 31, 3, 2, 0},
      {"googlenet_3x3s1p1", true, 10 * 480, 224, 224, 3, 1, 1},
      {"vgg_2x2s2", true, 10 * 64, 224, 112, 2, 2, 0},
      {"avg_3x3s1p1", false, 10 * 256, 56, 56, 3, 1, 1},
  };
  for (const Case& c : cases) {
    if (c.max)
      bench<PoolKind::max>(c, flush);
    else
      bench<PoolKind::avg>(c, flush);
  }
  CHECK_CUDA(cudaFree(flush));
  return 0;
}
