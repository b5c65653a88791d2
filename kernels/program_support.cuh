// Host-side helpers every generated program uses (the emitter only instantiates them): checking a
// tensor handed to the ABI against the shape the program was generated for, and tuning a GEMM's
// algorithm choice on scratch buffers at init.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "runtime.cuh"
#include "stitch/program.h"

namespace stitch::kernels {

// The dtype, rank and shape a program expects for one param, input or output (contiguous).
struct TensorSpec {
  int dtype;
  int rank;
  int64_t shape[STITCH_MAX_RANK];
};

// STITCH_OK when `t` has `want`'s dtype and shape, a non-null pointer and contiguous strides (size-1
// dims may have any stride); otherwise STITCH_ERROR_INVALID_ARGUMENT with `error` naming it
// ("<what> <index>: ...").
inline int check_tensor(const stitch_tensor& t, const TensorSpec& want, const char* what,
                        int index, std::string& error) {
  bool same = t.dtype == want.dtype && t.rank == want.rank && t.data != nullptr;
  for (int d = 0; same && d < want.rank; ++d)
    same = t.shape[d] == want.shape[d];
  int64_t expected = 1;
  for (int d = want.rank - 1; same && d >= 0; --d) {
    if (want.shape[d] != 1 && t.strides[d] != expected) same = false;
    expected *= want.shape[d];
  }
  if (!same) {
    error = std::string(what) + " " + std::to_string(index) +
            ": not the dtype/shape/contiguous layout this program was generated for";
    return STITCH_ERROR_INVALID_ARGUMENT;
  }
  return STITCH_OK;
}

// Times a GEMM's candidate algorithms (LtMatmul or Tf32x3Matmul: anything with tune()) on zeroed
// scratch buffers of the operands' sizes, allocated here and freed before returning. Synchronises
// `stream`; for stitch_init only.
template <class Matmul>
int tune_on_scratch(Matmul& mm, int64_t a_elems, int64_t b_elems, int64_t d_elems,
                    int64_t bias_elems, cudaStream_t stream, std::string& error,
                    int iterations = 5) {
  const size_t a = Arena::align(a_elems * 4), b = Arena::align(b_elems * 4);
  const size_t d = Arena::align(d_elems * 4), bias = Arena::align(bias_elems * 4);
  char* base = nullptr;
  STITCH_CHECK_CUDA(cudaMalloc(&base, a + b + 2 * d + bias));
  int status = STITCH_OK;
  const cudaError_t zeroed = cudaMemsetAsync(base, 0, a + b + 2 * d + bias, stream);
  if (zeroed != cudaSuccess) {
    error = detail::format_failure(__FILE__, __LINE__, "cudaMemsetAsync(scratch)",
                                   cudaGetErrorName(zeroed), cudaGetErrorString(zeroed));
    status = STITCH_ERROR_CUDA;
  } else {
    status = mm.tune(reinterpret_cast<float*>(base), reinterpret_cast<float*>(base + a),
                     reinterpret_cast<float*>(base + a + b),
                     bias_elems ? reinterpret_cast<float*>(base + a + b + 2 * d) : nullptr, stream,
                     error, iterations);
  }
  cudaStreamSynchronize(stream);
  cudaFree(base);
  return status;
}

}  // namespace stitch::kernels
