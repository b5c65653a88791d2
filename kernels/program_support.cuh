// Host-side helpers every generated program uses (the emitter only instantiates them): checking a
// tensor handed to the ABI against the shape the program was generated for, tuning a GEMM's
// algorithm choice on scratch buffers at init, and timing two engines of one subtask against each
// other there.
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
  InitScratch scratch(stream);
  const int a = scratch.add(a_elems), b = scratch.add(b_elems), d = scratch.add(d_elems);
  const int bias = scratch.add(bias_elems);
  STITCH_CHECK(scratch.allocate(error));
  return mm.tune(scratch.at(a), scratch.at(b), scratch.at(d), scratch.at(bias), stream, error,
                 iterations);
}

// Times two ways of running the same subtask on `stream`: one warm-up each, then `iterations`
// runs each between CUDA events; second_faster: the second's total was the smaller. Each side
// returns a STITCH_ status. Synchronises `stream`; for stitch_init only (engines timed against
// each other: kernels/conv_engine_timing.cuh, time_gemm_against_strict below).
template <class First, class Second>
int time_alternatives(const First& first, const Second& second, cudaStream_t stream,
                      std::string& error, bool& second_faster, int iterations = 5) {
  cudaEvent_t start = nullptr, stop = nullptr;
  STITCH_CHECK_CUDA(cudaEventCreate(&start));
  if (const cudaError_t created = cudaEventCreate(&stop); created != cudaSuccess) {
    cudaEventDestroy(start);
    STITCH_CHECK_CUDA(created);
  }
  float ms[2] = {0, 0};
  int status = STITCH_OK;
  for (int side = 0; side < 2 && status == STITCH_OK; ++side) {
    auto run = [&] { return side == 0 ? first() : second(); };
    status = run();  // warm-up
    if (status == STITCH_OK) cudaEventRecord(start, stream);
    for (int i = 0; i < iterations && status == STITCH_OK; ++i)
      status = run();
    if (status != STITCH_OK) break;
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    cudaEventElapsedTime(&ms[side], start, stop);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamSynchronize(stream);
  if (status == STITCH_OK) second_faster = ms[1] < ms[0];
  return status;
}

// A split-precision GEMM (`split`: Tf32x3Matmul or GemmTf32x3, initialised; b_prepared: it runs
// with b = nullptr, B split at init) timed against strict FP32 (`strict`: an LtMatmul, initialised
// and tuned) on zeroed scratch operands of the GEMM's sizes (C as large as D where the GEMM
// accumulates it), allocated here and freed before returning; strict_faster: strict FP32 won.
// The plan's `strict_alternative` (src/plan/kernel_choice.h). For stitch_init only.
template <class Split, class Strict>
int time_gemm_against_strict(const Split& split, bool b_prepared, const Strict& strict,
                             int64_t a_elems, int64_t b_elems, int64_t d_elems,
                             int64_t bias_elems, bool accumulate, cudaStream_t stream,
                             std::string& error, bool& strict_faster, int iterations = 5) {
  InitScratch scratch(stream);
  const int a = scratch.add(a_elems), b = scratch.add(b_elems), d = scratch.add(d_elems);
  const int c = scratch.add(accumulate ? d_elems : 0), bias = scratch.add(bias_elems);
  STITCH_CHECK(scratch.allocate(error));
  const float beta = accumulate ? 1.0f : 0.0f;
  return time_alternatives(
      [&] {
        return split.run(scratch.at(a), b_prepared ? nullptr : scratch.at(b), scratch.at(c),
                         scratch.at(d), scratch.at(bias), 1.0f, beta, stream, error);
      },
      [&] {
        return strict.run(scratch.at(a), scratch.at(b), scratch.at(c), scratch.at(d),
                          scratch.at(bias), 1.0f, beta, stream, error);
      },
      stream, error, strict_faster, iterations);
}

}  // namespace stitch::kernels
