// Fixture: one own kernel for the whole forward: a shared-memory tiled GEMM with 128-bit loads and
// the bias and ReLU fused into its epilogue, captured once into a CUDA graph.
#include <cuda_runtime.h>

#include "stitch/program.h"

constexpr int kTile = 64, kDepth = 16;

__global__ void gemm_bias_relu_tiled(const float* __restrict__ x, const float* __restrict__ w,
                                     const float* __restrict__ bias, float* __restrict__ y, int m,
                                     int n, int k) {
  __shared__ float xs[kDepth][kTile + 4];
  __shared__ float ws[kDepth][kTile + 4];
  int row0 = blockIdx.y * kTile, col0 = blockIdx.x * kTile;
  float acc[4][4] = {};
  for (int k0 = 0; k0 < k; k0 += kDepth) {
    int r = threadIdx.x / 4, c = (threadIdx.x % 4) * 4;
    float4 xv = *reinterpret_cast<const float4*>(x + (row0 + r) * k + k0 + c);
    float4 wv = *reinterpret_cast<const float4*>(w + (col0 + r) * k + k0 + c);
    xs[c][r] = xv.x, xs[c + 1][r] = xv.y, xs[c + 2][r] = xv.z, xs[c + 3][r] = xv.w;
    ws[c][r] = wv.x, ws[c + 1][r] = wv.y, ws[c + 2][r] = wv.z, ws[c + 3][r] = wv.w;
    __syncthreads();
    for (int kk = 0; kk < kDepth; ++kk)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          acc[i][j] += xs[kk][threadIdx.y * 4 + i] * ws[kk][(threadIdx.x % 16) * 4 + j];
    __syncthreads();
  }
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      int row = row0 + threadIdx.y * 4 + i, col = col0 + (threadIdx.x % 16) * 4 + j;
      if (row < m && col < n) y[row * n + col] = fmaxf(acc[i][j] + bias[col], 0.0f);
    }
}

static int forward(cudaGraphExec_t* graph, const float* x, const float* w, const float* bias,
                   float* y, cudaStream_t stream) {
  const int m = 256, n = 2048, k = 1024;
  if (!*graph) {
    cudaGraph_t captured;
    cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    gemm_bias_relu_tiled<<<dim3(n / kTile, m / kTile), dim3(64, 16), 0, stream>>>(x, w, bias, y,
                                                                                  m, n, k);
    cudaStreamEndCapture(stream, &captured);
    cudaGraphInstantiate(graph, captured, 0);
  }
  return cudaGraphLaunch(*graph, stream) == cudaSuccess ? 0 : 1;
}
