// Gathers along one dim (index_select; index.Tensor with one index tensor; torch.gather): one
// thread per output element of an [outer, count, inner] index space, y[o, j, i] = x[o, index[j], i]
// (torch.gather: index[o, j, i]). The generated functor does the element's whole work — reads the
// index (any strides), wraps a negative index, reads x through its strides, stores — so the
// kernel is only the index space:
//
//   struct Gather { __device__ void operator()(int64_t o, int64_t j, int64_t i) const; };
//
// Consecutive threads take consecutive i, so an inner axis of unit stride is read and written
// coalesced; rows of x that several j pick are read again (from L2 when they are hot). Grid-stride
// over one wave of resident blocks; nothing allocated, CUDA-graph capturable.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "runtime.cuh"

namespace stitch::kernels {

namespace detail {

template <class Fn>
__global__ void gather_kernel(int64_t outer, int64_t count, int64_t inner, const Fn fn) {
  const int64_t total = outer * count * inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += stride) {
    const int64_t i = e % inner, rest = e / inner;
    fn(rest / count, rest % count, i);
  }
}

}  // namespace detail

template <class Fn>
cudaError_t launch_gather(int64_t outer, int64_t count, int64_t inner, const Fn& fn,
                          cudaStream_t stream, int block = 256) {
  if (outer < 0 || count < 0 || inner < 0 || block <= 0 || block > 1024)
    return cudaErrorInvalidValue;
  if (outer == 0 || count == 0 || inner == 0) return cudaSuccess;
  int64_t grid = 0;
  const cudaError_t e = grid_stride_blocks(outer * count * inner, block, grid);
  if (e != cudaSuccess) return e;
  detail::gather_kernel<<<static_cast<unsigned>(grid), block, 0, stream>>>(outer, count, inner,
                                                                          fn);
  return cudaGetLastError();
}

}  // namespace stitch::kernels
