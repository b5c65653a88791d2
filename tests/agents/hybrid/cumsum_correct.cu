// A correct fragment for subtask s01 of tests/tasks/hybrid_cumsum.py: an inclusive scan along each
// row of a [32, 128] float32 buffer, one block per row, a shared-memory scan per chunk of the row.
#include <cuda_runtime.h>

__global__ void cumsum_rows(const float* __restrict__ in, float* __restrict__ out, int rows,
                            int cols) {
  extern __shared__ float buffer[];
  const int row = blockIdx.x;
  float carry = 0.f;
  for (int base = 0; base < cols; base += blockDim.x) {
    const int col = base + threadIdx.x;
    buffer[threadIdx.x] = col < cols ? in[row * cols + col] : 0.f;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
      const float add = threadIdx.x >= offset ? buffer[threadIdx.x - offset] : 0.f;
      __syncthreads();
      buffer[threadIdx.x] += add;
      __syncthreads();
    }
    if (col < cols) out[row * cols + col] = carry + buffer[threadIdx.x];
    carry += buffer[blockDim.x - 1];
    __syncthreads();
  }
}

cudaError_t subtask_s01_opaque_cumsum_32x128(const float* in0, float* out0, cudaStream_t stream) {
  const int rows = 32, cols = 128, threads = 128;
  cumsum_rows<<<rows, threads, threads * sizeof(float), stream>>>(in0, out0, rows, cols);
  return cudaGetLastError();
}
