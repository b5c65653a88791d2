// Fixture: a program with front-end errors (undefined identifier, type mismatch) and a warning.
#include <cuda_runtime.h>

__global__ void add_one(float* data, int n) {
  int unused_index = 3;
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += undefined_scale;
}

int launch(float* data, int n) {
  float* wrong = n;
  add_one<<<1, 32>>>(data, n);
  return 0;
}
