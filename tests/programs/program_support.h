// Helpers shared by the hand-written test programs in this directory: error text for
// stitch_last_error, checked-call macros for CUDA / cuBLAS / cuDNN, tensor argument checks and
// device copies of params. Header-only so each program stays one nvcc invocation; it is also a
// local include, which the build cache must hash along with the program
// (tests/verify/build_cache_test.cc).
#pragma once

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdio>
#include <string>

#include "stitch/program.h"

namespace stitch_program {

// Text of the last failed stitch_init: there is no state to hold it yet. thread_local because two
// runner threads could initialise two programs at once; the ABI asks for nothing stronger.
inline std::string& init_error() {
  static thread_local std::string text;
  return text;
}

// Formats an error into `sink` and returns `code`, so a failing check is one `return`.
inline int fail(std::string* sink, int code, const char* format, ...) {
  char buffer[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof(buffer), format, args);
  va_end(args);
  if (sink) *sink = buffer;
  return code;
}

inline int64_t element_count(const stitch_tensor& t) {
  int64_t count = 1;
  for (int i = 0; i < t.rank; ++i)
    count *= t.shape[i];
  return count;
}

inline bool is_contiguous(const stitch_tensor& t) {
  int64_t expected = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

// Checks dtype float32, the rank (or any rank when rank < 0) and row-major contiguity.
inline int check_float_tensor(std::string* sink, const stitch_tensor& t, const char* what,
                              int rank) {
  if (t.data == nullptr && element_count(t) > 0)
    return fail(sink, STITCH_ERROR_INVALID_ARGUMENT, "%s: null data pointer", what);
  if (t.dtype != STITCH_FLOAT32)
    return fail(sink, STITCH_ERROR_INVALID_ARGUMENT, "%s: dtype %d, expected float32", what,
                static_cast<int>(t.dtype));
  if (rank >= 0 && t.rank != rank)
    return fail(sink, STITCH_ERROR_INVALID_ARGUMENT, "%s: rank %d, expected %d", what, t.rank,
                rank);
  if (t.rank < 0 || t.rank > STITCH_MAX_RANK)
    return fail(sink, STITCH_ERROR_INVALID_ARGUMENT, "%s: rank %d out of range", what, t.rank);
  if (!is_contiguous(t))
    return fail(sink, STITCH_ERROR_INVALID_ARGUMENT, "%s: not contiguous (row-major)", what);
  return STITCH_OK;
}

// Copies a device tensor into a buffer the program owns: the ABI does not promise that the params
// handed to stitch_init outlive the call.
inline int copy_to_owned(std::string* sink, const stitch_tensor& t, float** owned) {
  size_t bytes = static_cast<size_t>(element_count(t)) * sizeof(float);
  cudaError_t status = cudaMalloc(owned, bytes > 0 ? bytes : sizeof(float));
  if (status != cudaSuccess)
    return fail(
        sink, status == cudaErrorMemoryAllocation ? STITCH_ERROR_OUT_OF_MEMORY : STITCH_ERROR_CUDA,
        "cudaMalloc(%zu) failed: %s", bytes, cudaGetErrorString(status));
  if (bytes == 0) return STITCH_OK;
  status = cudaMemcpy(*owned, t.data, bytes, cudaMemcpyDeviceToDevice);
  if (status != cudaSuccess)
    return fail(sink, STITCH_ERROR_CUDA, "cudaMemcpy(param) failed: %s",
                cudaGetErrorString(status));
  return STITCH_OK;
}

}  // namespace stitch_program

// Each macro returns from the enclosing function with a status code, after writing the failed call
// and the library's error text to the std::string* named `error_sink` in that scope.
#define STITCH_CUDA_CHECK(call)                                                                   \
  do {                                                                                            \
    cudaError_t stitch_status_ = (call);                                                          \
    if (stitch_status_ != cudaSuccess)                                                            \
      return ::stitch_program::fail(                                                              \
          error_sink,                                                                             \
          stitch_status_ == cudaErrorMemoryAllocation ? STITCH_ERROR_OUT_OF_MEMORY                \
                                                      : STITCH_ERROR_CUDA,                        \
          "%s:%d: %s failed: %s", __FILE__, __LINE__, #call, cudaGetErrorString(stitch_status_)); \
  } while (0)

// Launch errors surface through cudaGetLastError; checked after every launch.
#define STITCH_LAUNCH_CHECK() STITCH_CUDA_CHECK(cudaGetLastError())

#define STITCH_TRY_STATUS(call)                         \
  do {                                                  \
    int stitch_code_ = (call);                          \
    if (stitch_code_ != STITCH_OK) return stitch_code_; \
  } while (0)
