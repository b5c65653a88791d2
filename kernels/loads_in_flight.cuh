// A thread's strided walk over a range with several loads in flight. One load at a time per thread
// keeps too few bytes in flight to approach the DRAM bandwidth (512 threads x 4 resident blocks x
// 4 B is 8 KB per SM, where an H200 needs about 22 KB: 4.8 TB/s x ~600 ns over 132 SMs); issuing
// kLoadsInFlight loads before their values are used covers it. The values are used in the order of
// a plain loop, so results are bit-identical to one.
#pragma once

#include <cstdint>

namespace stitch::kernels::detail {

inline constexpr int kLoadsInFlight = 4;

// use(i, load(i)) for i = first, first + step, ... < end, in that order: kLoadsInFlight loads at a
// time, the last batch's loads past `end` predicated off (a short range, such as a pooling
// window's row, still has all its loads in flight at once).
template <class Load, class Use>
__device__ __forceinline__ void for_each_strided(int64_t first, int64_t end, int64_t step,
                                                 const Load& load, Use&& use) {
  for (int64_t i = first; i < end; i += kLoadsInFlight * step) {
    float x[kLoadsInFlight];
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u)
      x[u] = i + u * step < end ? load(i + u * step) : 0.0f;
#pragma unroll
    for (int u = 0; u < kLoadsInFlight; ++u)
      if (i + u * step < end) use(i + u * step, x[u]);
  }
}

}  // namespace stitch::kernels::detail
