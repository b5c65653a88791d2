// Reductions of an [outer, reduce, inner] index space over its middle axis, with a generated
// prologue that loads (and transforms) each element and a generated epilogue that stores each
// result:
//
//   struct Pro { __device__ float operator()(int64_t o, int64_t r, int64_t i) const; };
//   struct Epi { __device__ void operator()(int64_t o, int64_t i, Result result) const; };
//
// Result is float (sum, max, min, prod, logsumexp), ValueIndex (argmax, argmin) or MeanVar
// (mean_var).
//
// Strategies, chosen by plan_reduce from the shape alone (pure, CPU-tested, device independent so
// results are bit-identical on any GPU):
//   row_per_thread inner == 1, reduce <= 16: a thread per row, in order (a pooling window: a warp
//                  per row would leave most lanes idle and take one warp step per row).
//   row_per_warp   inner == 1, reduce <= 1024: a warp per row, lanes stride the row, shuffles.
//   row_per_block  inner == 1, longer rows: a block per row, warp shuffles then shared memory.
//   columns        inner > 1: a block of (x over inner) × (y over reduce) threads per 32-wide (or
//                  narrower, for small inner) tile of outputs; loads are coalesced along inner.
// When the outputs are too few to fill the GPU and the reduction is long, the reduce axis is split
// over `splits` blocks (grid.y) that write partial accumulators to a caller-provided workspace
// (reduce_workspace_bytes); a second kernel combines them in split order and calls the epilogue.
// Every combine happens in a fixed order (no atomics), so a second run gives identical bits.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "loads_in_flight.cuh"
#include "runtime.cuh"

namespace stitch::kernels {

enum class ReduceOp { sum, max, min, prod, argmax, argmin, mean_var, logsumexp };

// argmax/argmin: the extreme value and the first index holding it. NaN counts as the extreme (as in
// PyTorch): the first NaN's index is returned. An empty reduction gives index -1.
struct ValueIndex {
  float value;
  int64_t index;
};

// mean_var: the mean and sum of squared deviations (m2) over `count` elements: a thread's elements
// as shifted sums (Reducer<mean_var>::Run), partials combined with Chan et al.'s formula;
// var = m2 / (count - correction) is the epilogue's job.
struct MeanVar {
  float mean;
  float m2;
  int64_t count;
};

// logsumexp: the largest element and the sum of exp(x - max) over the elements so far.
struct MaxSum {
  float max;
  float sum;
};

namespace detail {

__device__ __forceinline__ float nan_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}
__device__ __forceinline__ float nan_min(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? a : b;
}

// Per op: the accumulator, its identity, how one element enters it (accumulate), how two partial
// accumulators merge (combine: any grouping gives a valid result; the kernels fix the grouping so
// it is also reproducible) and the result handed to the epilogue.
template <ReduceOp Op>
struct Reducer;

template <>
struct Reducer<ReduceOp::sum> {
  using Acc = float;
  using Result = float;
  __device__ static Acc identity() { return 0.0f; }
  __device__ static Acc accumulate(Acc a, float x, int64_t) { return a + x; }
  __device__ static Acc combine(Acc a, Acc b) { return a + b; }
  __device__ static Result finish(Acc a) { return a; }
};

// Products accumulate in double: every factor's rounding reaches a product, and on an H200 a
// float chain over 2^20..5e6 near-one factors drifted 7e-4..1e-2 relative (far beyond a random
// walk of sqrt(n) eps). The H200 multiplies doubles at half the float rate, and a reduction is
// memory bound, so this costs nothing measurable.
template <>
struct Reducer<ReduceOp::prod> {
  using Acc = double;
  using Result = float;
  __device__ static Acc identity() { return 1.0; }
  __device__ static Acc accumulate(Acc a, float x, int64_t) { return a * static_cast<double>(x); }
  __device__ static Acc combine(Acc a, Acc b) { return a * b; }
  __device__ static Result finish(Acc a) { return static_cast<float>(a); }
};

template <>
struct Reducer<ReduceOp::max> {
  using Acc = float;
  using Result = float;
  __device__ static Acc identity() { return -__int_as_float(0x7f800000); }
  __device__ static Acc accumulate(Acc a, float x, int64_t) { return nan_max(a, x); }
  __device__ static Acc combine(Acc a, Acc b) { return nan_max(a, b); }
  __device__ static Result finish(Acc a) { return a; }
};

template <>
struct Reducer<ReduceOp::min> {
  using Acc = float;
  using Result = float;
  __device__ static Acc identity() { return __int_as_float(0x7f800000); }
  __device__ static Acc accumulate(Acc a, float x, int64_t) { return nan_min(a, x); }
  __device__ static Acc combine(Acc a, Acc b) { return nan_min(a, b); }
  __device__ static Result finish(Acc a) { return a; }
};

// The identity's index is INT64_MAX so that on equal values any real index wins the tie-break.
template <bool Max>
struct ArgReducer {
  using Acc = ValueIndex;
  using Result = ValueIndex;
  static constexpr int64_t kNoIndex = INT64_MAX;
  __device__ static Acc identity() {
    return ValueIndex{Max ? -__int_as_float(0x7f800000) : __int_as_float(0x7f800000), kNoIndex};
  }
  __device__ static Acc combine(Acc a, Acc b) {
    const bool a_nan = a.value != a.value, b_nan = b.value != b.value;
    if (a_nan || b_nan) {
      if (a_nan && b_nan) return a.index <= b.index ? a : b;
      return a_nan ? a : b;
    }
    if (Max ? a.value > b.value : a.value < b.value) return a;
    if (Max ? b.value > a.value : b.value < a.value) return b;
    return a.index <= b.index ? a : b;
  }
  __device__ static Acc accumulate(Acc a, float x, int64_t r) {
    return combine(a, ValueIndex{x, r});
  }
  __device__ static Result finish(Acc a) {
    if (a.index == kNoIndex) a.index = -1;
    return a;
  }
};
template <>
struct Reducer<ReduceOp::argmax> : ArgReducer<true> {};
template <>
struct Reducer<ReduceOp::argmin> : ArgReducer<false> {};

// A thread's own elements enter a Run: sums of d = x - shift and of d², shift being its first
// element (the shifted-data algorithm), three floating-point operations per element where
// Welford's update divides by the count for each (on an H200 a BatchNorm statistics pass over
// 1.35 GB, issue-bound with Welford, ran at 35% of DRAM bandwidth, 0.80 ms; with shifted sums
// 0.50 ms). With the shift one of the elements, sum(d²) exceeds m2 by count · (mean - shift)², a
// few times m2 at most for any element within a few standard deviations of the mean: the
// subtraction at the end loses no more than that factor in rounding. Runs then become MeanVar
// partials, which combine by Chan et al.'s formula.
template <>
struct Reducer<ReduceOp::mean_var> {
  using Acc = MeanVar;
  using Result = MeanVar;
  struct Run {
    float shift, sum, sum_sq;
    int64_t count;
  };
  __device__ static Acc identity() { return MeanVar{0.0f, 0.0f, 0}; }
  __device__ static Run start(float first) { return Run{first, 0.0f, 0.0f, 0}; }
  __device__ static Run add(Run run, float x, int64_t) {
    const float d = x - run.shift;
    run.sum += d;
    run.sum_sq = fmaf(d, d, run.sum_sq);
    run.count += 1;
    return run;
  }
  __device__ static Acc end(Acc a, Run run) {
    if (run.count == 0) return a;
    const float n = static_cast<float>(run.count), mean_d = run.sum / n;
    return combine(a, MeanVar{run.shift + mean_d, fmaxf(run.sum_sq - run.sum * mean_d, 0.0f),
                              run.count});
  }
  __device__ static Acc combine(Acc a, Acc b) {
    if (b.count == 0) return a;
    if (a.count == 0) return b;
    const int64_t count = a.count + b.count;
    const float b_share = static_cast<float>(b.count) / static_cast<float>(count);
    const float delta = b.mean - a.mean;
    return MeanVar{a.mean + delta * b_share,
                   a.m2 + b.m2 + delta * delta * static_cast<float>(a.count) * b_share, count};
  }
  __device__ static Result finish(Acc a) { return a; }
};

// log(sum(exp(x))) in one pass (the online form of max, then sum(exp(x - max))): an element
// above the running max rescales the sum by exp(old max - new max), one exp per element otherwise.
// As torch: NaN anywhere gives NaN, an +inf element +inf, all -inf (or none) -inf.
template <>
struct Reducer<ReduceOp::logsumexp> {
  using Acc = MaxSum;
  using Result = float;
  __device__ static float inf() { return __int_as_float(0x7f800000); }
  __device__ static Acc identity() { return MaxSum{-inf(), 0.0f}; }
  __device__ static Acc accumulate(Acc a, float x, int64_t) {
    if (x != x || a.max != a.max) return MaxSum{x != x ? x : a.max, 0.0f};
    if (x > a.max) return MaxSum{x, fmaf(a.sum, expf(a.max - x), 1.0f)};  // exp(-inf) = 0
    if (x > -inf() && a.max < inf()) a.sum += expf(x - a.max);
    return a;
  }
  __device__ static Acc combine(Acc a, Acc b) {
    if (a.max != a.max) return a;
    if (b.max != b.max) return b;
    const float m = fmaxf(a.max, b.max);
    if (m == -inf() || m == inf()) return MaxSum{m, 0.0f};  // finish ignores the sum there
    return MaxSum{m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
  }
  __device__ static Result finish(Acc a) {
    if (a.max != a.max || a.max == inf() || a.max == -inf()) return a.max;
    return logf(a.sum) + a.max;
  }
};

// Bytes of one partial accumulator in the workspace, whatever the op (so the workspace size does
// not depend on it).
inline constexpr size_t kPartialBytes = 16;
static_assert(sizeof(ValueIndex) <= kPartialBytes && sizeof(MeanVar) <= kPartialBytes &&
                  sizeof(MaxSum) <= kPartialBytes,
              "");

__device__ __forceinline__ float shuffle_down(float v, int delta) {
  return __shfl_down_sync(0xffffffffu, v, delta);
}
__device__ __forceinline__ double shuffle_down(double v, int delta) {
  return __shfl_down_sync(0xffffffffu, v, delta);
}
__device__ __forceinline__ ValueIndex shuffle_down(ValueIndex v, int delta) {
  return ValueIndex{
      __shfl_down_sync(0xffffffffu, v.value, delta),
      static_cast<int64_t>(__shfl_down_sync(0xffffffffu, static_cast<long long>(v.index), delta))};
}
__device__ __forceinline__ MeanVar shuffle_down(MeanVar v, int delta) {
  return MeanVar{
      __shfl_down_sync(0xffffffffu, v.mean, delta), __shfl_down_sync(0xffffffffu, v.m2, delta),
      static_cast<int64_t>(__shfl_down_sync(0xffffffffu, static_cast<long long>(v.count), delta))};
}

__device__ __forceinline__ MaxSum shuffle_down(MaxSum v, int delta) {
  return MaxSum{__shfl_down_sync(0xffffffffu, v.max, delta),
                __shfl_down_sync(0xffffffffu, v.sum, delta)};
}

// Lane 0 gets the combination of the warp's 32 values (a fixed butterfly order).
template <class R>
__device__ __forceinline__ typename R::Acc warp_reduce(typename R::Acc v) {
#pragma unroll
  for (int delta = 16; delta > 0; delta /= 2)
    v = R::combine(v, shuffle_down(v, delta));
  return v;
}

// Thread 0 gets the combination of the block's values. blockDim.x is a multiple of 32 (≤ 1024);
// every thread must call it. `scratch` holds 32 accumulators; the trailing barrier lets the caller
// reuse it in its next iteration.
template <class R>
__device__ typename R::Acc block_reduce(typename R::Acc v, typename R::Acc* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int warps = blockDim.x / 32;
  v = warp_reduce<R>(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < warps ? scratch[lane] : R::identity();
    v = warp_reduce<R>(v);
  }
  __syncthreads();
  return v;
}

enum class ReduceStrategy : uint8_t { row_per_warp, row_per_block, columns, row_per_thread };

struct ReducePlan {
  ReduceStrategy strategy = ReduceStrategy::row_per_warp;
  int block_x = 32;     // threads per block along inner (columns) or the row
  int block_y = 1;      // threads per block along reduce (columns)
  int64_t splits = 1;   // blocks sharing one output's reduction (grid.y)
  int64_t chunk = 0;    // reduce elements per split
  int64_t outputs = 0;  // outer * inner
  int64_t work = 0;     // rows (row strategies) or tiles (columns): units of grid.x
};

// Tuning constants; changing them changes result bits (the grouping of the sums).
inline constexpr int64_t kThreadRowMax = 16;  // rows up to this length: a thread per row
inline constexpr int64_t kWarpRowMax = 1024;  // rows up to this length: a warp per row
// Fewer rows (or column tiles) than kSplitBelowBlocks are split along the reduction, into about
// kSplitTargetBlocks blocks: a few rows more than one wave of resident blocks would otherwise
// leave most of the GPU idle in their second wave (an H200 holds 528 blocks of 512 threads; a
// BatchNorm's statistics over 672 channels ran in 1.27 waves at 31% of DRAM bandwidth). At four
// thousand blocks the last wave's idle share is small.
inline constexpr int64_t kSplitBelowBlocks = 1024;
inline constexpr int64_t kSplitTargetBlocks = 4096;
inline constexpr int64_t kMinRowSplit = 8192;    // elements per split, row strategies
inline constexpr int64_t kMinColumnSplit = 256;  // reduce steps per split, columns

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Splits so that about kSplitTargetBlocks blocks run, each with at least `min_chunk` elements.
inline void choose_splits(ReducePlan& plan, int64_t reduce, int64_t min_chunk) {
  plan.splits = 1;
  plan.chunk = reduce;
  if (plan.work >= kSplitBelowBlocks) return;
  int64_t splits = ceil_div(kSplitTargetBlocks, plan.work > 0 ? plan.work : 1);
  if (splits > reduce / min_chunk) splits = reduce / min_chunk;
  if (splits <= 1) return;
  plan.chunk = ceil_div(reduce, splits);
  plan.splits = ceil_div(reduce, plan.chunk);
}

// The strategy for a shape (all sizes >= 0 and their product representable).
inline ReducePlan plan_reduce(int64_t outer, int64_t reduce, int64_t inner) {
  ReducePlan plan;
  plan.outputs = outer * inner;
  if (inner == 1) {
    plan.work = outer;
    if (reduce <= kThreadRowMax) {
      plan.strategy = ReduceStrategy::row_per_thread;
      plan.block_x = 256;
      plan.chunk = reduce;
      return plan;
    }
    if (reduce <= kWarpRowMax) {
      plan.strategy = ReduceStrategy::row_per_warp;
      plan.block_x = 256;  // 8 rows per block
      plan.chunk = reduce;
      return plan;
    }
    plan.strategy = ReduceStrategy::row_per_block;
    plan.block_x = reduce >= 8192 ? 512 : 256;
    choose_splits(plan, reduce, kMinRowSplit);
    return plan;
  }
  plan.strategy = ReduceStrategy::columns;
  int bx = 1;
  while (bx < 32 && bx < inner)
    bx *= 2;
  int by = 256 / bx;
  while (by > 1 && by / 2 >= reduce)
    by /= 2;
  plan.block_x = bx;
  plan.block_y = by;
  plan.work = outer * ceil_div(inner, bx);
  choose_splits(plan, reduce, kMinColumnSplit);
  return plan;
}

// How a thread's own elements enter its accumulator: R::accumulate one by one, or, where the
// reducer has a Run (mean_var), into a Run started from the first element and folded into the
// accumulator at the end.
template <class R, class = void>
struct ThreadRun {
  using Type = typename R::Acc;
  template <class Load>
  __device__ static Type start(typename R::Acc acc, const Load&, int64_t, int64_t) {
    return acc;
  }
  __device__ static Type add(Type run, float x, int64_t r) { return R::accumulate(run, x, r); }
  __device__ static typename R::Acc end(typename R::Acc, Type run) { return run; }
};
template <class R>
struct ThreadRun<R, std::void_t<typename R::Run>> {
  using Type = typename R::Run;
  template <class Load>
  __device__ static Type start(typename R::Acc, const Load& load, int64_t first, int64_t end) {
    return R::start(first < end ? load(first) : 0.0f);
  }
  __device__ static Type add(Type run, float x, int64_t r) { return R::add(run, x, r); }
  __device__ static typename R::Acc end(typename R::Acc acc, Type run) { return R::end(acc, run); }
};

// A thread's part of a reduce range: r = first, first + step, ... < end, accumulated in that order
// with several loads in flight (loads_in_flight.cuh): the bits of a plain loop.
template <class R, class Load>
__device__ __forceinline__ typename R::Acc accumulate_strided(typename R::Acc acc, const Load& load,
                                                              int64_t first, int64_t end,
                                                              int64_t step) {
  using Run = ThreadRun<R>;
  typename Run::Type run = Run::start(acc, load, first, end);
  for_each_strided(first, end, step, load, [&](int64_t r, float x) { run = Run::add(run, x, r); });
  return Run::end(acc, run);
}

// One thread per (short) row, accumulated in index order.
template <ReduceOp Op, class Pro, class Epi>
__global__ void __launch_bounds__(256)
    reduce_row_per_thread_kernel(const Pro pro, const Epi epi, int64_t outer, int64_t reduce) {
  using R = Reducer<Op>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; o < outer;
       o += step) {
    const auto load = [&](int64_t r) { return pro(o, r, int64_t{0}); };
    epi(o, int64_t{0}, R::finish(accumulate_strided<R>(R::identity(), load, 0, reduce, 1)));
  }
}

// One warp per row; lane 0 finishes the row.
template <ReduceOp Op, class Pro, class Epi>
__global__ void __launch_bounds__(256)
    reduce_row_per_warp_kernel(const Pro pro, const Epi epi, int64_t outer, int64_t reduce) {
  using R = Reducer<Op>;
  const int lane = threadIdx.x % 32;
  const int64_t warps_per_block = blockDim.x / 32;
  const int64_t step = static_cast<int64_t>(gridDim.x) * warps_per_block;
  for (int64_t o = static_cast<int64_t>(blockIdx.x) * warps_per_block + threadIdx.x / 32; o < outer;
       o += step) {
    const auto load = [&](int64_t r) { return pro(o, r, int64_t{0}); };
    typename R::Acc acc = accumulate_strided<R>(R::identity(), load, lane, reduce, 32);
    acc = warp_reduce<R>(acc);
    if (lane == 0) epi(o, int64_t{0}, R::finish(acc));
  }
}

// One block per (row, split); with one split thread 0 finishes the row, otherwise it writes the
// partial to partials[split * outer + row].
template <ReduceOp Op, class Pro, class Epi>
__global__ void __launch_bounds__(512)
    reduce_row_per_block_kernel(const Pro pro, const Epi epi, int64_t outer, int64_t reduce,
                                int64_t chunk, typename Reducer<Op>::Acc* partials) {
  using R = Reducer<Op>;
  __shared__ typename R::Acc scratch[32];
  const int64_t split = blockIdx.y;
  const int64_t begin = split * chunk;
  const int64_t end = begin + chunk < reduce ? begin + chunk : reduce;
  for (int64_t o = blockIdx.x; o < outer; o += gridDim.x) {
    const auto load = [&](int64_t r) { return pro(o, r, int64_t{0}); };
    typename R::Acc acc =
        accumulate_strided<R>(R::identity(), load, begin + threadIdx.x, end, blockDim.x);
    acc = block_reduce<R>(acc, scratch);
    if (threadIdx.x == 0) {
      if (partials == nullptr)
        epi(o, int64_t{0}, R::finish(acc));
      else
        partials[split * outer + o] = acc;
    }
  }
}

// Tiles of blockDim.x consecutive inner positions of one outer index, per (tile, split). Threads
// along y stride the reduce range; a shared-memory tree over y then combines them in fixed order.
template <ReduceOp Op, class Pro, class Epi>
__global__ void __launch_bounds__(256)
    reduce_columns_kernel(const Pro pro, const Epi epi, int64_t outer, int64_t reduce,
                          int64_t inner, int64_t chunk, typename Reducer<Op>::Acc* partials) {
  using R = Reducer<Op>;
  __shared__ typename R::Acc scratch[256];
  const int x = threadIdx.x, y = threadIdx.y;
  const int bx = blockDim.x, by = blockDim.y;
  const int64_t tiles_per_outer = (inner + bx - 1) / bx;
  const int64_t tiles = outer * tiles_per_outer;
  const int64_t split = blockIdx.y;
  const int64_t begin = split * chunk;
  const int64_t end = begin + chunk < reduce ? begin + chunk : reduce;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t o = t / tiles_per_outer;
    const int64_t i = (t - o * tiles_per_outer) * bx + x;
    typename R::Acc acc = R::identity();
    if (i < inner)
      acc = accumulate_strided<R>(
          acc, [&](int64_t r) { return pro(o, r, i); }, begin + y, end, by);
    scratch[y * bx + x] = acc;
    __syncthreads();
    for (int half = by / 2; half > 0; half /= 2) {
      if (y < half)
        scratch[y * bx + x] = R::combine(scratch[y * bx + x], scratch[(y + half) * bx + x]);
      __syncthreads();
    }
    if (y == 0 && i < inner) {
      if (partials == nullptr)
        epi(o, i, R::finish(scratch[x]));
      else
        partials[split * outer * inner + o * inner + i] = scratch[x];
    }
    __syncthreads();  // scratch is rewritten by the next tile
  }
}

// Combines partials[0..splits) of each output in split order and calls the epilogue.
template <ReduceOp Op, class Epi>
__global__ void __launch_bounds__(256)
    reduce_finish_kernel(const Epi epi, int64_t outputs, int64_t inner, int64_t splits,
                         const typename Reducer<Op>::Acc* partials) {
  using R = Reducer<Op>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < outputs;
       k += step) {
    typename R::Acc acc = partials[k];
    for (int64_t s = 1; s < splits; ++s)
      acc = R::combine(acc, partials[s * outputs + k]);
    const int64_t o = k / inner;
    epi(o, k - o * inner, R::finish(acc));
  }
}

inline bool reduce_shape_valid(int64_t outer, int64_t reduce, int64_t inner) {
  int64_t product = 0;
  return outer >= 0 && reduce >= 0 && inner >= 0 &&
         !__builtin_mul_overflow(outer, inner, &product) &&
         !__builtin_mul_overflow(product, reduce, &product);
}

// Blocks for `work` units, at most one wave of resident blocks (the kernels loop over the rest).
inline unsigned capped_grid(int64_t work, int64_t resident_cap) {
  int64_t grid = work < resident_cap ? work : resident_cap;
  return static_cast<unsigned>(grid < 1 ? 1 : grid);
}

}  // namespace detail

// Bytes of workspace launch_reduce needs for this shape (any op): 0 when it reduces in one pass.
inline size_t reduce_workspace_bytes(int64_t outer, int64_t reduce, int64_t inner) {
  if (!detail::reduce_shape_valid(outer, reduce, inner)) return 0;
  const detail::ReducePlan plan = detail::plan_reduce(outer, reduce, inner);
  if (plan.splits <= 1) return 0;
  return static_cast<size_t>(plan.splits) * static_cast<size_t>(plan.outputs) *
         detail::kPartialBytes;
}

// Reduces over r for every (o, i) on `stream`, calling epi(o, i, result) once per output (also
// when reduce == 0: the op's identity — 0, 1, -inf/+inf, index -1, count 0). `workspace` must
// hold reduce_workspace_bytes(outer, reduce, inner) bytes, 16-byte aligned, and not be used by
// other work on the stream meanwhile; it may be nullptr when that is 0. Functors are copied to the
// device (trivially copyable).
// Returns cudaSuccess (0), cudaErrorInvalidValue (negative or overflowing sizes, a missing or
// misaligned workspace) or the launch's cudaError_t, as an int.
template <ReduceOp Op, class Prologue, class Epilogue>
int launch_reduce(int64_t outer, int64_t reduce, int64_t inner, const Prologue& pro,
                  const Epilogue& epi, void* workspace, cudaStream_t stream) {
  static_assert(std::is_trivially_copyable_v<Prologue> && std::is_trivially_copyable_v<Epilogue>,
                "functors are passed to kernels by value");
  using Acc = typename detail::Reducer<Op>::Acc;
  if (!detail::reduce_shape_valid(outer, reduce, inner)) return cudaErrorInvalidValue;
  if (outer == 0 || inner == 0) return cudaSuccess;
  const detail::ReducePlan plan = detail::plan_reduce(outer, reduce, inner);
  Acc* partials = nullptr;
  if (plan.splits > 1) {
    if (workspace == nullptr || reinterpret_cast<uintptr_t>(workspace) % 16 != 0)
      return cudaErrorInvalidValue;
    partials = static_cast<Acc*>(workspace);
  }
  DeviceProperties props;
  cudaError_t e = current_device_properties(props);
  if (e != cudaSuccess) return e;
  const int threads = plan.block_x * plan.block_y;
  const int64_t resident =
      static_cast<int64_t>(props.sm_count) *
      (props.max_threads_per_sm / threads > 0 ? props.max_threads_per_sm / threads : 1);
  switch (plan.strategy) {
    case detail::ReduceStrategy::row_per_thread: {
      const int64_t blocks = (outer + plan.block_x - 1) / plan.block_x;
      detail::reduce_row_per_thread_kernel<Op, Prologue, Epilogue>
          <<<detail::capped_grid(blocks, resident), plan.block_x, 0, stream>>>(pro, epi, outer,
                                                                               reduce);
      return cudaGetLastError();
    }
    case detail::ReduceStrategy::row_per_warp: {
      const int rows_per_block = plan.block_x / 32;
      const int64_t blocks = (outer + rows_per_block - 1) / rows_per_block;
      detail::reduce_row_per_warp_kernel<Op, Prologue, Epilogue>
          <<<detail::capped_grid(blocks, resident), plan.block_x, 0, stream>>>(pro, epi, outer,
                                                                               reduce);
      return cudaGetLastError();
    }
    case detail::ReduceStrategy::row_per_block: {
      const dim3 grid(detail::capped_grid(outer, resident), static_cast<unsigned>(plan.splits));
      detail::reduce_row_per_block_kernel<Op, Prologue, Epilogue>
          <<<grid, plan.block_x, 0, stream>>>(pro, epi, outer, reduce, plan.chunk, partials);
      break;
    }
    case detail::ReduceStrategy::columns: {
      const dim3 grid(detail::capped_grid(plan.work, resident), static_cast<unsigned>(plan.splits));
      const dim3 block(static_cast<unsigned>(plan.block_x), static_cast<unsigned>(plan.block_y));
      detail::reduce_columns_kernel<Op, Prologue, Epilogue>
          <<<grid, block, 0, stream>>>(pro, epi, outer, reduce, inner, plan.chunk, partials);
      break;
    }
  }
  e = cudaGetLastError();
  if (e != cudaSuccess || plan.splits <= 1) return e;
  const int64_t finish_blocks = (plan.outputs + 255) / 256;
  detail::reduce_finish_kernel<Op, Epilogue>
      <<<detail::capped_grid(finish_blocks, static_cast<int64_t>(props.sm_count) *
                                                (props.max_threads_per_sm / 256)),
         256, 0, stream>>>(epi, plan.outputs, inner, plan.splits, partials);
  return cudaGetLastError();
}

// The same without a workspace: fails with cudaErrorInvalidValue for shapes that need one.
template <ReduceOp Op, class Prologue, class Epilogue>
int launch_reduce(int64_t outer, int64_t reduce, int64_t inner, const Prologue& pro,
                  const Epilogue& epi, cudaStream_t stream) {
  return launch_reduce<Op>(outer, reduce, inner, pro, epi, static_cast<void*>(nullptr), stream);
}

}  // namespace stitch::kernels
