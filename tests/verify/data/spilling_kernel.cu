// Fixture: a kernel whose register cap forces spills, one with static shared memory, and a
// templated kernel (mangled names to demangle).
#include <cuda_runtime.h>

__global__ void __launch_bounds__(1024, 2) many_live_values(const float* in, float* out, int n) {
  float v[64];
#pragma unroll
  for (int k = 0; k < 64; ++k) v[k] = in[(threadIdx.x + k * 97) % n];
  float acc = 0.0f;
#pragma unroll
  for (int r = 0; r < 8; ++r)
#pragma unroll
    for (int k = 0; k < 64; ++k) acc += v[k] * v[(k * 7 + r) % 64];
  out[threadIdx.x] = acc;
}

__global__ void tile_transpose(const float* in, float* out, int n) {
  __shared__ float tile[32][33];
  tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * n + threadIdx.x];
  __syncthreads();
  out[threadIdx.x * n + threadIdx.y] = tile[threadIdx.x][threadIdx.y];
}

template <typename T, int kWidth>
__global__ void scaled_copy(const T* in, T* out, T scale) {
  out[threadIdx.x * kWidth] = in[threadIdx.x * kWidth] * scale;
}

template __global__ void scaled_copy<float, 4>(const float*, float*, float);

__constant__ float kCoefficients[256];

__global__ void apply_coefficients(float* data) { data[threadIdx.x] *= kCoefficients[threadIdx.x]; }
