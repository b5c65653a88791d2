// The runner's own device work, callable from g++-compiled code: random fills in the declared
// distributions, NaN poison and its count, guard-band canaries, element and byte comparisons,
// checksums. Implemented in runner_kernels.cu (the only file nvcc compiles). Every function
// enqueues on `stream` and returns the launch status; counters land in device memory the caller
// reads back after synchronizing.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "stitch/program.h"

namespace stitch::runner {

// Shape and element strides of one tensor inside its storage; logical elements are visited in
// row-major order and mapped through the strides.
struct Geometry {
  int32_t rank = 0;
  int64_t shape[STITCH_MAX_RANK] = {};
  int64_t strides[STITCH_MAX_RANK] = {};
  int64_t numel = 0;
  bool contiguous = true;
};

enum class FillKind : int32_t { uniform = 0, normal = 1, randint = 2, bernoulli = 3 };

struct CompareCounts {
  unsigned long long bit_mismatches;        // elements whose bits differ
  unsigned long long tolerance_mismatches;  // |a-b| > atol + rtol*|b|, or NaN in one only
  unsigned long long max_abs_diff_bits;     // double bits of max |a-b| over finite pairs
};

// Bit pattern of poison `pattern` (0 or 1) for a dtype: a quiet NaN with a payload arithmetic
// does not produce for floating types, 0xA5.../0x5A... for integers, an invalid byte for bool.
uint64_t poison_bits(stitch_dtype dtype, int pattern);

// An empty kernel launched on the caller's stream right after stitch_forward returns: its CUPTI
// start time is the moment the caller's stream finished the forward. Its name is kStreamMarkerName.
inline constexpr const char* kStreamMarkerName = "stitch_runner_stream_marker";
cudaError_t launch_stream_marker(cudaStream_t stream);

cudaError_t fill_random(void* data, stitch_dtype dtype, const Geometry& geometry, FillKind kind,
                        double a, double b, uint64_t seed, cudaStream_t stream);

cudaError_t fill_poison(void* data, stitch_dtype dtype, const Geometry& geometry, int pattern,
                        cudaStream_t stream);

// Adds to *counter the logical elements still holding poison `pattern`.
cudaError_t count_poison(const void* data, stitch_dtype dtype, const Geometry& geometry,
                         int pattern, unsigned long long* counter, cudaStream_t stream);

// Canary bytes are a function of (seed, byte offset from `base`), so a write that restores a
// constant cannot repair them. Fills / checks bytes [begin, end) of the allocation at `base`.
cudaError_t fill_canary(void* base, uint64_t begin, uint64_t end, uint64_t seed,
                        cudaStream_t stream);
cudaError_t count_canary_mismatches(const void* base, uint64_t begin, uint64_t end, uint64_t seed,
                                    unsigned long long* counter, cudaStream_t stream);

// Element-wise comparison of a and b (same dtype and geometry). counts must be zeroed first.
cudaError_t compare_elements(const void* a, const void* b, stitch_dtype dtype,
                             const Geometry& geometry, double atol, double rtol,
                             CompareCounts* counts, cudaStream_t stream);

// Adds to *counter the bytes that differ between a and b.
cudaError_t count_byte_mismatches(const void* a, const void* b, uint64_t bytes,
                                  unsigned long long* counter, cudaStream_t stream);

// Adds an order-sensitive hash of the bytes to *sum (zero it first).
cudaError_t checksum_bytes(const void* data, uint64_t bytes, unsigned long long* sum,
                           cudaStream_t stream);

}  // namespace stitch::runner
