// What the kernel benches (tests/kernels/*_bench.cu: not tests, built on demand and run by hand
// on a GPU) share: a CUDA check that exits with the failing call, and the median time of a run
// with L2 flushed before each.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                                      \
  do {                                                                                     \
    cudaError_t e_ = static_cast<cudaError_t>(x);                                          \
    if (e_ != cudaSuccess) {                                                               \
      std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

namespace stitch::bench {

// What median_ms writes before each run: more than the L2 holds, so no run reads the last one's.
inline constexpr size_t kFlushBytes = size_t{256} << 20;

// The median of `iterations` runs of `run` (its work on the default stream) after `warmups`, each
// timed with CUDA events, `flush` (kFlushBytes) rewritten before each.
template <class Run>
double median_ms(Run run, void* flush, int warmups, int iterations) {
  cudaEvent_t start, stop;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  std::vector<float> times;
  for (int i = 0; i < warmups + iterations; ++i) {
    CHECK_CUDA(cudaMemsetAsync(flush, i, kFlushBytes));
    CHECK_CUDA(cudaEventRecord(start));
    run();
    CHECK_CUDA(cudaEventRecord(stop));
    CHECK_CUDA(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    if (i >= warmups) times.push_back(ms);
  }
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace stitch::bench
