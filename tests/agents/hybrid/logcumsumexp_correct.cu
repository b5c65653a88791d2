// A correct fragment for subtask s01 of tests/tasks/hybrid_logcumsumexp.py: an inclusive
// log-sum-exp scan along each row of a [32, 128] float32 buffer, one block per row, a
// shared-memory scan per chunk of the row.
#include <cuda_runtime.h>


// log(exp(a) + exp(b)) without overflow; -inf is the identity.
static __device__ __forceinline__ float log_add_exp(float a, float b) {
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const float hi = fmaxf(a, b), lo = fminf(a, b);
  return hi + log1pf(expf(lo - hi));
}

__global__ void logcumsumexp_rows(const float* __restrict__ in, float* __restrict__ out, int rows,
                                  int cols) {
  extern __shared__ float buffer[];
  const int row = blockIdx.x;
  float carry = -INFINITY;
  for (int base = 0; base < cols; base += blockDim.x) {
    const int col = base + threadIdx.x;
    buffer[threadIdx.x] = col < cols ? in[row * cols + col] : -INFINITY;
    __syncthreads();
    for (int offset = 1; offset < blockDim.x; offset <<= 1) {
      const float earlier = threadIdx.x >= offset ? buffer[threadIdx.x - offset] : -INFINITY;
      __syncthreads();
      buffer[threadIdx.x] = log_add_exp(earlier, buffer[threadIdx.x]);
      __syncthreads();
    }
    if (col < cols) out[row * cols + col] = log_add_exp(carry, buffer[threadIdx.x]);
    carry = log_add_exp(carry, buffer[blockDim.x - 1]);
    __syncthreads();
  }
}

cudaError_t subtask_s01_opaque_logcumsumexp_32x128(const float* in0, float* out0,
                                                   cudaStream_t stream) {
  const int rows = 32, cols = 128, threads = 128;
  logcumsumexp_rows<<<rows, threads, threads * sizeof(float), stream>>>(in0, out0, rows, cols);
  return cudaGetLastError();
}
