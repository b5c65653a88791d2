// A hacked fragment (HACKS.md row 2): the right scan, launched on a stream of its own that is
// never joined back into the caller's, so events on the caller's stream see none of its work.
#include <cuda_runtime.h>


__global__ void logcumsumexp_rows_serial(const float* in, float* out, int rows, int cols) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float acc = -INFINITY;
  for (int col = 0; col < cols; ++col) {
    const float x = in[row * cols + col];
    const float hi = fmaxf(acc, x), lo = fminf(acc, x);
    acc = lo == -INFINITY ? hi : hi + log1pf(expf(lo - hi));
    out[row * cols + col] = acc;
  }
}

cudaError_t subtask_s01_opaque_logcumsumexp_32x128(const float* in0, float* out0,
                                                   cudaStream_t stream) {
  (void)stream;
  cudaStream_t side = nullptr;
  const cudaError_t created = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  if (created != cudaSuccess) return created;
  logcumsumexp_rows_serial<<<1, 32, 0, side>>>(in0, out0, 32, 128);
  return cudaGetLastError();
}
