// A reduction over a convolution's output channels, applied by the kernel as it stores
// (ConvDirectOf and ConvIgemm::set_channel_reduction): at each output position, its channels'
// results — after the epilogue and the output transform — combined by kOp (NaN propagating, as
// PyTorch's min and max), then `finish` (plane: the image) gives the one value stored there.
// The convolution's own output is never written.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <type_traits>

#include "plane_transform.cuh"

namespace stitch::kernels::detail {

enum class ChannelReduceOp { sum, max, min };

template <ChannelReduceOp kOp, class Finish = PlaneIdentity>
struct ChannelReduction {
  Finish finish{};

  __host__ __device__ static float identity() {
    return kOp == ChannelReduceOp::sum ? 0.0f : kOp == ChannelReduceOp::max ? -INFINITY : INFINITY;
  }
  // a, where it wins or is NaN; else b (NaN where b is).
  __host__ __device__ static float combine(float a, float b) {
    if constexpr (kOp == ChannelReduceOp::sum)
      return a + b;
    else
      return (kOp == ChannelReduceOp::max ? a > b : a < b) || a != a ? a : b;
  }
};

// No channel reduction: every result stored (its identity only initialises unused registers).
struct NoChannelReduction {
  __host__ __device__ static float identity() { return 0.0f; }
};

template <class Reduction>
inline constexpr bool kReducesChannels = !std::is_same_v<Reduction, NoChannelReduction>;

// "" when a kernel class set up with set_channel_reduction (`reduce`) or without it, and with or
// without an output map, may be initialised for Reduction; else why not (its init says it).
template <class Reduction>
inline const char* channel_reduction_setup_problem(bool reduce, bool has_output_map) {
  if (reduce != kReducesChannels<Reduction>)
    return reduce ? "a channel reduction needs its type"
                  : "a reduction type without set_channel_reduction";
  return reduce && has_output_map ? "a channel reduction takes no output map" : "";
}

// r combined over the four lanes of its quad (lanes 4q .. 4q + 3, which hold one row of an mma
// tile's accumulators between them); every lane of the warp takes part.
template <class Reduction>
__device__ __forceinline__ float combine_over_quad(float r) {
  r = Reduction::combine(r, __shfl_xor_sync(0xffffffffu, r, 1));
  return Reduction::combine(r, __shfl_xor_sync(0xffffffffu, r, 2));
}

}  // namespace stitch::kernels::detail
