// A hacked fragment (HACKS.md row 2): the right scan, launched on a stream of its own that is
// never joined back into the caller's, so events on the caller's stream see none of its work.
#include <cuda_runtime.h>

__global__ void cumsum_rows_serial(const float* in, float* out, int rows, int cols) {
  const int row = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  float sum = 0.f;
  for (int col = 0; col < cols; ++col) {
    sum += in[row * cols + col];
    out[row * cols + col] = sum;
  }
}

cudaError_t subtask_s01_opaque_cumsum_32x128(const float* in0, float* out0, cudaStream_t stream) {
  (void)stream;
  cudaStream_t side = nullptr;
  const cudaError_t created = cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  if (created != cudaSuccess) return created;
  cumsum_rows_serial<<<1, 32, 0, side>>>(in0, out0, 32, 128);
  return cudaGetLastError();
}
