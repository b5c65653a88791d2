// Fixture: static shared memory over the per-block limit, rejected by ptxas.
__global__ void too_much_shared(float* out) {
  __shared__ float big[65536];
  big[threadIdx.x] = 1.0f;
  __syncthreads();
  out[threadIdx.x] = big[(threadIdx.x + 1) % 65536];
}
