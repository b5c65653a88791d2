// Split-precision 3xTF32 GEMM on Hopper's warpgroup tensor cores (wgmma.mma_async and TMA,
// sm_90a only): the arithmetic, output tile, split K and epilogue of the mma.sync kernel of
// gemm_tf32x3.cuh (GemmTf32x3 picks this one on a compute capability 9.0 device when the program
// was built for sm_90a; gemm_tf32x3_kernels_built of gemm_tf32x3_common.cuh says so at init).
// Built for any other target the kernel body is empty and never launched.
//
// B is split before the GEMM, into two TF32 copies in a layout of this kernel's own
// (WgmmaSplitB): once at init for a parameter (prepare_b), else by a short pass per run. Per
// output column n, K rounded up to a multiple of 32 with zeros, and inside each block of 32 the
// columns permuted so that K step kk (8 wide) of a tile holds columns 8s + 2kk (slot s < 4) and
// 8s + 2kk + 1 (slot s + 4) — the order in which a thread reads its A values as two 16-byte
// loads per row (below). TMA then brings a tile of each copy into shared memory already in the
// K-major SWIZZLE_128B layout wgmma reads (128-byte rows of 32 TF32, 16-byte chunks XOR-swizzled
// by row % 8): no split and no shared-memory rewrite inside the kernel. A is read as it is (any
// alignment) and split in registers where it is used, as in the mma.sync kernel.
//
// Block: 384 threads, warp-specialised. Warps 8-11 are the producer warpgroup: per K tile of 32
// they wait for the ring slot to be free (EMPTY mbarrier), thread 0 starts the TMA loads of the
// two B tiles (FULL's transaction count), and the 128 threads copy the raw A tile [128][32] by
// cp.async into the same swizzled layout (zeros past the edges), each arriving at FULL when its
// copies land (cp.async.mbarrier.arrive.noinc). One warp alone could not issue A's copies fast
// enough: the consumers waited on FULL 85% of the time. Warps 0-7 are two consumer warpgroups,
// each 64 rows x 128 columns of the 128 x 128 tile: wait FULL, read their A fragments and split
// them (big = tf32(x), small = x - big, truncated by the tensor cores: split_tf32_for_mma),
// issue the tile's 12 m64n128k8 wgmmas (small_a·big_b, big_a·small_b, big_a·big_b over 4 K
// steps, smallest first) and commit; then wait until only this batch runs (wgmma.wait_group 1),
// which frees the previous tile's slot (one EMPTY arrival per warp) and its A registers — two A
// register sets alternate, so the tensor cores always have the next batch queued. The ring's slot
// and phase and the chunk position are counters (RingPosition), not divisions per K tile.
//
// Accumulation. The tensor cores' FP32 accumulation truncates as it adds, so its error grows
// with the products one accumulator takes. They accumulate GemmTf32x3Args::chunk_tiles K tiles
// (default kWgmmaChunkTiles = 4: 128 K elements, 48 truncating additions) into a chunk sum
// `part`, started from zero (scale-d 0); at the chunk's end the warpgroup waits for all its
// wgmmas and adds part into the FP32 `acc` on the CUDA cores (round to nearest). The two
// warpgroups' chunk ends are half a chunk apart, so one's drain overlaps the other's products.
// On an H200 chunks of 8 or 16 tiles were no faster and 2-4x less accurate (kernels/README.md).
// One product (the tf32 and bf16 tracks) sums the whole K range in the tensor cores, into acc.
// (The mma.sync kernel adds per K tile; Tf32x3Matmul per 3072 elements.)
//
// The GEMM's tile is 128 x 128; the implicit-GEMM convolution also runs this pipeline on 128 x 64
// tiles (WgmmaTile below: m64n64k8 wgmmas, half the accumulators, six stages of half the B bytes),
// and, on the tf32 and bf16 tracks, with one product per K step (Tf32Products::one: big_a·big_b,
// A rounded to TF32 in registers, only B's big copy loaded; the stage keeps the small tile's room,
// except in the convolutions' 256-wide tile, which only one product takes: WgmmaTile<256>).
//
// Budget per block (one per SM): shared memory 1 KiB alignment + 4 stages x (A 16 KiB + two B
// tiles 32 KiB) = 193 KiB of 227 (the 64-wide tile: 6 x (16 + 16) KiB, the 256-wide one's 4 x
// (16 + 32) KiB: the same). Registers:
// __launch_bounds__(384, 1) compiles for 168 per thread; setmaxnreg then gives the producers 40
// and the consumers 232 (64 acc + 64 part + 2 x 32 A + addressing; the 256-wide tile's one product:
// 128 acc + 2 x 16 A) — per SM sub-partition one producer warp and two consumer warps share its
// 16384 (ptxas -v; the spill check: tests/codegen/program_golden_test.cc).
#pragma once

#include <cuda.h>  // CUtensorMap and its enums (types only: the driver call goes through cudart)
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "gemm_tf32x3_common.cuh"

namespace stitch::kernels {

namespace detail {

inline constexpr int kWgmmaConsumerThreads = 256;                  // two warpgroups
inline constexpr int kWgmmaThreads = kWgmmaConsumerThreads + 128;  // + the producer warpgroup
// Registers per thread after setmaxnreg: per SM sub-partition one producer warp and two consumer
// warps share 16384 (40 + 2 x 232 = 504 per lane, 32 lanes).
inline constexpr int kWgmmaProducerRegisters = 40, kWgmmaConsumerRegisters = 232;
inline constexpr int kWgmmaTileFloats = kGemmBM * kGemmBK;  // the raw A tile, 128 x 32
// A FULL barrier's arrivals per phase: the producer warpgroup's 128 threads once their cp.asyncs
// of A land, and thread 0's expect_tx of B's bytes; or thread 0's expect_tx alone where A comes by
// TMA too (wgmma_produce_by_tma).
inline constexpr int kWgmmaFullArrivalsCopying = 128 + 1, kWgmmaFullArrivalsTma = 1;
inline constexpr int kWgmmaTileBytes = kWgmmaTileFloats * 4;
static_assert(kGemmBM == 128 && kGemmBN == 128 && kGemmBK == 32 && kGemmThreads == 256,
              "the wgmma kernel's thread and swizzle mapping is written for this tile");

// A block's output tile is 128 rows by kBN columns: 128 (the GEMM; convolutions with more than 64
// output channels per group) or 64 (narrower convolutions, which a 128-wide tile would compute
// half empty), and on the one-product tracks 256 (convolutions of more than 128 output channels
// per group: per K tile the same A tile feeds twice the products, so a third less operand traffic
// per product comes from L2). Each consumer warpgroup's part is 64 x kBN (m64nKBNk8 wgmmas, kAcc
// accumulators per thread); a stage is the raw A tile and the two B tiles of kBN rows, the wide
// tile's only the big one (it makes one product). The narrow tile's stages are half as large:
// six of them fill the same shared memory as the 128-wide tile's four; the 256-wide tile's four
// stages take as much as those.
template <int kBN>
struct WgmmaTile {
  static_assert(kBN == 256 || kBN == 128 || kBN == 64,
                "the wgmma pipeline has 64-, 128- and (one product) 256-wide tiles");
  static constexpr bool kOneProductOnly = kBN == 256;
  static constexpr int kAcc = kBN / 2;  // 64 x kBN accumulators over a warpgroup's 128 threads
  static constexpr int kBTileBytes = kBN * kGemmBK * 4;
  static constexpr int kBTiles = kOneProductOnly ? 1 : 2;  // big B; small B
  static constexpr int kStageBytes = kWgmmaTileBytes + kBTiles * kBTileBytes;
  static constexpr int kStages = kBN == 64 ? 6 : 4;
  static constexpr size_t kSmemBytes = 1024 + size_t{kStages} * kStageBytes;
};
static_assert(WgmmaTile<64>::kSmemBytes <= WgmmaTile<128>::kSmemBytes);
static_assert(WgmmaTile<256>::kSmemBytes <= WgmmaTile<128>::kSmemBytes);

// The two TMA descriptors of a WgmmaSplitB, passed by value as a __grid_constant__ kernel parameter.
struct WgmmaMaps {
  CUtensorMap big, small;
};

// Position p (0 .. k32 - 1) of a split B row holds column wgmma_split_column(p) of B.
__host__ __device__ inline int64_t wgmma_split_column(int64_t p) {
  return (p & ~int64_t{31}) + ((p & 31) >> 2) + 8 * (p & 3);
}

// Where element (row, column) of a raw A tile [128][32] lies in shared memory: 16-byte chunk
// column / 4 of the row at chunk (column / 4) ^ (row % 8), the SWIZZLE_128B layout the consumers'
// fragment loads read (load_a_fragments).
__host__ __device__ inline int wgmma_a_offset(int row, int column) {
  return row * 32 + (((column >> 2) ^ (row & 7)) << 2) + (column & 3);
}

// Column kc (< k) of a K ordered (tap, channel) with `channels` channels per tap, the first
// `used` of them B's (a convolution weight read by the channels-last gather of
// conv_igemm_common.cuh; the rest zero channels of a padded x): B's column in its (channel, tap)
// order, channel · taps + tap with taps = k / channels, or -1 for a padding channel.
__host__ __device__ inline int64_t tap_major_source_column(int64_t kc, int64_t k, int64_t channels,
                                                           int64_t used) {
  const int64_t tap = kc / channels, channel = kc - tap * channels;
  return channel < used ? channel * (k / channels) + tap : -1;
}

// x's split_tf32 halves to *big and *small; big alone (TF32 rounding) where small is null, the
// copies of a one-product (TF32) GEMM.
__device__ __forceinline__ void store_split_tf32(float x, uint32_t* big, uint32_t* small) {
  if (small == nullptr) {
    *big = round_tf32(x);
    return;
  }
  split_tf32(x, *big, *small);
}

// B (batches of [k, n], or [n, k] when trans_b) into big[batch][n][k32] and small[...] (null: big
// alone): TF32 bit patterns in the permuted order above, zeros past k. k_channels > 0 also
// reorders K from B's (channel, tap) to (tap, channel) (tap_major_source_column, with k_used of
// the k_channels channels B's: zeros for the others).
template <int kUnused = 0>
__global__ void split_b_for_wgmma(const float* b, int64_t ldb, int64_t stride_b, bool trans_b,
                                  int64_t batches, int64_t n, int64_t k, int64_t k32,
                                  int64_t k_channels, int64_t k_used, uint32_t* big,
                                  uint32_t* small) {
  const int64_t total = batches * n * k32;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    int64_t batch, col, p;
    if (trans_b) {  // consecutive threads along B's contiguous k
      p = i % k32, col = i / k32 % n, batch = i / (k32 * n);
    } else {  // ... along B's contiguous n
      col = i % n, p = i / n % k32, batch = i / (n * k32);
    }
    int64_t kc = wgmma_split_column(p);
    if (k_channels > 0 && kc < k) kc = tap_major_source_column(kc, k, k_channels, k_used);
    const float x = kc >= 0 && kc < k
                        ? b[batch * stride_b + (trans_b ? col * ldb + kc : kc * ldb + col)]
                        : 0.0f;
    const int64_t at = (batch * n + col) * k32 + p;
    store_split_tf32(x, big + at, small == nullptr ? nullptr : small + at);
  }
}

// split_b_for_wgmma for B of [k, n] (not trans_b), a transpose: a thread per element would read
// along n and write along k, k32 words apart (on a 1x1 convolution's 225 MB activation 7.5 ms,
// DRAM 22%, against 0.15 ms of traffic). A block instead moves a 32 (positions p) x 32 (columns)
// tile through shared memory: rows of B read 128 bytes at a time, rows of the copies written so.
// Block (32, 8); grid (ceil(n / 32), k32 / 32, batches).
inline constexpr int kSplitTransposeRows = 8;
template <int kUnused = 0>
__global__ void split_b_for_wgmma_transposing(const float* b, int64_t ldb, int64_t stride_b,
                                              int64_t n, int64_t k, int64_t k32, int64_t k_channels,
                                              int64_t k_used, uint32_t* big, uint32_t* small) {
  __shared__ float tile[32][33];  // [p][column], padded against bank conflicts on the way out
  const int64_t col0 = int64_t{blockIdx.x} * 32, p0 = int64_t{blockIdx.y} * 32, batch = blockIdx.z;
  const int lane = threadIdx.x;
  for (int r = threadIdx.y; r < 32; r += kSplitTransposeRows) {
    int64_t kc = wgmma_split_column(p0 + r);
    if (k_channels > 0 && kc < k) kc = tap_major_source_column(kc, k, k_channels, k_used);
    const int64_t col = col0 + lane;
    tile[r][lane] = kc >= 0 && kc < k && col < n ? b[batch * stride_b + kc * ldb + col] : 0.0f;
  }
  __syncthreads();
  for (int c = threadIdx.y; c < 32; c += kSplitTransposeRows) {
    const int64_t col = col0 + c;
    if (col >= n) break;
    const int64_t at = (batch * n + col) * k32 + p0 + lane;
    store_split_tf32(tile[lane][c], big + at, small == nullptr ? nullptr : small + at);
  }
}

#if defined(STITCH_GEMM_WGMMA)

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
// Waits until at most kPending of this warpgroup's committed wgmma batches are still running.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}
// Pins a register the asynchronous wgmma reads or writes: the compiler may neither read it before
// the wgmma_wait that follows the batch nor reuse it earlier.
__device__ __forceinline__ void pin_register(float& x) {
  asm volatile("" : "+f"(x)::"memory");
}
__device__ __forceinline__ void pin_register(uint32_t& x) {
  asm volatile("" : "+r"(x)::"memory");
}

// The descriptor of a K-major SWIZZLE_128B tile at `tile` (1024-byte aligned): 8-row groups 1024
// bytes apart (stride byte offset), the leading byte offset unused by swizzled K-major layouts.
// The K step kk of 8 TF32 starts 32·kk bytes into the rows: descriptor + 2·kk.
__device__ __forceinline__ uint64_t wgmma_descriptor(const void* tile) {
  const uint64_t address = smem_address(tile);
  return ((address & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}

__device__ __forceinline__ void mbarrier_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count)
               : "memory");
}
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_address(bar)) : "memory");
}
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   smem_address(bar)),
               "r"(bytes)
               : "memory");
}
// Waits until the phase of `parity` (0 or 1) of the barrier has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT;\n"
      "}\n" ::"r"(smem_address(bar)),
      "r"(parity)
      : "memory");
}
// This thread's arrival at `bar` once all its earlier cp.asyncs have landed (counted in the
// barrier's expected arrivals).
__device__ __forceinline__ void cp_async_arrive_noinc(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_address(bar))
               : "memory");
}
// The box at (c0, c1, c2) of a 3-d tensor map into shared memory, completing bytes on `bar`.
__device__ __forceinline__ void tma_load_3d(void* dst, const CUtensorMap* map, int c0, int c1,
                                            int c2, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, "
      "%3, %4}], [%5];\n" ::"r"(smem_address(dst)),
      "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(smem_address(bar))
      : "memory");
}

// D (64 x 128, FP32, this warpgroup's part) = A (64 x 8, TF32 registers) · B (8 x 128, TF32, a
// K-major 128-byte-swizzled shared tile at desc_b) + (accumulate ? D : 0). Asynchronous: D and A
// must not be touched until the wgmma_wait that covers it.
__device__ __forceinline__ void wgmma_m64n128k8(float (&d)[64], const uint32_t (&a)[4],
                                                uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %68, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
      "}, {%64, %65, %66, %67}, %69, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(accumulate), "l"(desc_b));
}
// As wgmma_m64n128k8 for the 64-wide tile: D 64 x 64, B 8 x 64.
__device__ __forceinline__ void wgmma_m64n64k8(float (&d)[32], const uint32_t (&a)[4],
                                               uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %36, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
      "}, {%32, %33, %34, %35}, %37, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(accumulate), "l"(desc_b));
}
// As wgmma_m64n128k8 for the 256-wide tile (one product only): D 64 x 256, B 8 x 256.
__device__ __forceinline__ void wgmma_m64n256k8(float (&d)[128], const uint32_t (&a)[4],
                                                uint64_t desc_b, int accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "setp.ne.b32 p, %132, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
      "%12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, "
      "%36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, "
      "%60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, "
      "%72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, "
      "%84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, "
      "%108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, "
      "%120, %121, %122, %123, %124, %125, %126, %127"
      "}, {%128, %129, %130, %131}, %133, p, 1, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]),
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]),
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]),
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]),
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]),
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(accumulate), "l"(desc_b));
}
// The m64nKBNk8 wgmma of a kBN-wide tile.
template <int kBN>
__device__ __forceinline__ void wgmma_m64k8(float (&d)[kBN / 2], const uint32_t (&a)[4],
                                            uint64_t desc_b, int accumulate) {
  if constexpr (kBN == 256)
    wgmma_m64n256k8(d, a, desc_b, accumulate);
  else if constexpr (kBN == 128)
    wgmma_m64n128k8(d, a, desc_b, accumulate);
  else
    wgmma_m64n64k8(d, a, desc_b, accumulate);
}

// 128 rows of K-contiguous A (row r at src + r·ld; `rows` valid), K columns [k0, k_end) of the 32
// from k0, into s[128][32] with 16-byte chunk c of row r at chunk c ^ (r % 8) (SWIZZLE_128B);
// zeros elsewhere. By the producer warpgroup's 128 threads (ptid): with 16-byte copies a thread
// keeps one chunk column c and the rows r0 + 16i, so its destinations are 2 KiB apart.
template <bool kVec4>
__device__ __forceinline__ void load_a_tile(float* s, const float* src, int64_t ld, int rows,
                                            int k0, int k_end, int ptid) {
  if constexpr (kVec4) {
    const int r0 = ptid >> 3, c = ptid & 7;
    const bool k_ok = k0 + c * 4 < k_end;
    const float* from = src + r0 * ld + k0 + c * 4;
    float* to = s + r0 * 32 + ((c ^ (r0 & 7)) << 2);
#pragma unroll
    for (int i = 0; i < kWgmmaTileFloats / 4 / 128; ++i) {
      const bool ok = k_ok && r0 + 16 * i < rows;
      cp_async_16(to + i * 16 * 32, ok ? from + i * 16 * ld : src, ok);
    }
  } else {
#pragma unroll 4
    for (int i = 0; i < kWgmmaTileFloats / 128; ++i) {
      const int idx = ptid + i * 128, r = idx >> 5, c = idx & 31;
      const bool ok = r < rows && k0 + c < k_end;
      cp_async_4(s + wgmma_a_offset(r, c), ok ? src + r * ld + k0 + c : src, ok);
    }
  }
}

// This thread's A fragments of a K tile, split: rows `row` and row + 8 of the raw A tile (row % 8
// = the lane's group g), columns 8t .. 8t + 7 (t = lane % 4), so that K step kk holds column
// 8t + 2kk in slot t and 8t + 2kk + 1 in slot t + 4: registers {(g, t), (g + 8, t), (g, t + 4),
// (g + 8, t + 4)} as wgmma's .tf32 A fragment orders them. One product: big alone (rounded to
// TF32), small untouched.
template <Tf32Products kProducts>
__device__ __forceinline__ void load_a_fragments(const float* raw, int row, int t,
                                                 uint32_t (&big)[4][4], uint32_t (&small)[4][4]) {
  const int swizzle = row & 7;
  const float* top = raw + row * 32;
  const float* bottom = top + 8 * 32;
  const float4 top_lo = *reinterpret_cast<const float4*>(top + (((2 * t) ^ swizzle) << 2));
  const float4 top_hi = *reinterpret_cast<const float4*>(top + (((2 * t + 1) ^ swizzle) << 2));
  const float4 bottom_lo = *reinterpret_cast<const float4*>(bottom + (((2 * t) ^ swizzle) << 2));
  const float4 bottom_hi =
      *reinterpret_cast<const float4*>(bottom + (((2 * t + 1) ^ swizzle) << 2));
  const float upper[8] = {top_lo.x, top_lo.y, top_lo.z, top_lo.w,
                          top_hi.x, top_hi.y, top_hi.z, top_hi.w};
  const float lower[8] = {bottom_lo.x, bottom_lo.y, bottom_lo.z, bottom_lo.w,
                          bottom_hi.x, bottom_hi.y, bottom_hi.z, bottom_hi.w};
  if constexpr (kProducts == Tf32Products::one) {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      big[kk][0] = round_tf32(upper[2 * kk]);
      big[kk][1] = round_tf32(lower[2 * kk]);
      big[kk][2] = round_tf32(upper[2 * kk + 1]);
      big[kk][3] = round_tf32(lower[2 * kk + 1]);
    }
  } else {
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      split_tf32_for_mma(upper[2 * kk], big[kk][0], small[kk][0]);
      split_tf32_for_mma(lower[2 * kk], big[kk][1], small[kk][1]);
      split_tf32_for_mma(upper[2 * kk + 1], big[kk][2], small[kk][2]);
      split_tf32_for_mma(lower[2 * kk + 1], big[kk][3], small[kk][3]);
    }
  }
}

// One K tile's 12 wgmmas of this warpgroup into `part` (accumulate 0: the first starts the sum
// from zero), smallest products first, committed as one batch; 4 (big·big) for one product.
template <int kBN, Tf32Products kProducts>
__device__ __forceinline__ void issue_tile_products(float (&part)[kBN / 2],
                                                    const uint32_t (&a_big)[4][4],
                                                    const uint32_t (&a_small)[4][4], uint64_t b_big,
                                                    uint64_t b_small, int accumulate) {
  wgmma_fence();
  if constexpr (kProducts == Tf32Products::one) {
    (void)a_small, (void)b_small;
    wgmma_m64k8<kBN>(part, a_big[0], b_big, accumulate);
#pragma unroll
    for (int kk = 1; kk < 4; ++kk)
      wgmma_m64k8<kBN>(part, a_big[kk], b_big + 2 * kk, 1);
  } else {
    wgmma_m64k8<kBN>(part, a_small[0], b_big, accumulate);
#pragma unroll
    for (int kk = 1; kk < 4; ++kk)
      wgmma_m64k8<kBN>(part, a_small[kk], b_big + 2 * kk, 1);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wgmma_m64k8<kBN>(part, a_big[kk], b_small + 2 * kk, 1);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wgmma_m64k8<kBN>(part, a_big[kk], b_big + 2 * kk, 1);
  }
  wgmma_commit();
}

template <class Registers>
__device__ __forceinline__ void pin_all(Registers& r) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j)
      pin_register(r[i][j]);
}

// A position in the ring of kStages slots: its slot and the parity of its lap (how many times
// the ring has gone round before it, mod 2: the mbarrier phase its FULL wait expects), stepped by
// counting instead of ring % kStages and ring / kStages per K tile.
template <int kStages>
struct RingPosition {
  int slot = 0;
  uint32_t lap_parity = 0;
  __device__ __forceinline__ void next() {
    if (++slot == kStages) slot = 0, lap_parity ^= 1;
  }
  // `steps` positions on (once per output tile: a division there is cheap).
  __device__ __forceinline__ void skip(int steps) {
    slot += steps;
    lap_parity ^= static_cast<uint32_t>(slot / kStages) & 1;
    slot %= kStages;
  }
};

// Where a block's shared tiles and barriers are, and the K range of the output tile it works on
// (tiles kBN wide). A persistent block works on one output tile after another through the same
// ring: `first` counts the K tiles of its earlier output tiles, so the ring's slots and phases
// run on across them (K tile kt of this range is ring position first + kt, `start` is first's).
template <int kBN>
struct WgmmaBlock {
  using Tile = WgmmaTile<kBN>;
  uint8_t* base;  // 1024-byte aligned
  uint64_t* full;
  uint64_t* empty;
  int k_begin, k_end, k_tiles;
  int first;
  RingPosition<Tile::kStages> start;

  // The next output tile's K range [begin, end), its K tiles after this range's in the ring.
  __device__ void advance(int begin, int end) {
    first += k_tiles;
    start.skip(k_tiles);
    k_begin = begin, k_end = end;
    k_tiles = (end - begin + kGemmBK - 1) / kGemmBK;
  }

  __device__ float* raw_a(int slot) const {
    return reinterpret_cast<float*>(base + slot * Tile::kStageBytes);
  }
  __device__ uint8_t* big_b(int slot) const {
    return base + slot * Tile::kStageBytes + kWgmmaTileBytes;
  }
  __device__ uint8_t* small_b(int slot) const { return big_b(slot) + Tile::kBTileBytes; }
};

// The B tiles of the K tile at k0 into `slot` by TMA (the big copy alone for one product),
// completing on the slot's FULL barrier, whose expect_tx the caller has given.
template <Tf32Products kProducts, int kBN>
__device__ __forceinline__ void wgmma_load_b(const WgmmaMaps& maps, const WgmmaBlock<kBN>& blk,
                                             int slot, int k0, int n0, int batch_b) {
  tma_load_3d(blk.big_b(slot), &maps.big, k0, n0, batch_b, &blk.full[slot]);
  if constexpr (kProducts == Tf32Products::three)
    tma_load_3d(blk.small_b(slot), &maps.small, k0, n0, batch_b, &blk.full[slot]);
}
// B's bytes per K tile: one tile per TF32 copy loaded.
template <Tf32Products kProducts, int kBN>
inline constexpr uint32_t kWgmmaBBytes =
    (kProducts == Tf32Products::one ? 1 : 2) * WgmmaTile<kBN>::kBTileBytes;

// The producer warpgroup: every K tile's B loads (TMA, by thread 0) and A copies into the ring.
// load_a(tile, k0) copies the raw A tile of K columns [k0, k0 + 32) into `tile` by cp.async (the
// consumers' swizzled layout, zeros past the edges); every producer thread calls it per tile.
// The copies may still be in flight on return: the producer waits for them (cp_async_wait<0>)
// before it exits. FULL counts the 128 threads' arrivals and thread 0's expect_tx
// (kWgmmaFullArrivalsCopying).
template <Tf32Products kProducts, int kBN, class LoadA>
__device__ __forceinline__ void wgmma_produce(const WgmmaMaps& maps, const WgmmaBlock<kBN>& blk,
                                              int n0, int batch_b, int ptid, LoadA&& load_a) {
  constexpr int kStages = WgmmaTile<kBN>::kStages;
  RingPosition<kStages> at = blk.start;
  for (int kt = 0; kt < blk.k_tiles; ++kt, at.next()) {
    const int slot = at.slot;
    // A slot's first use waits for nothing; later ones for the consumers' release of the lap
    // before.
    if (blk.first + kt >= kStages) mbarrier_wait(&blk.empty[slot], at.lap_parity ^ 1);
    const int k0 = blk.k_begin + kt * kGemmBK;
    if (ptid == 0) {
      mbarrier_arrive_expect_tx(&blk.full[slot], kWgmmaBBytes<kProducts, kBN>);
      wgmma_load_b<kProducts>(maps, blk, slot, k0, n0, batch_b);
    }
    load_a(blk.raw_a(slot), k0);
    cp_async_arrive_noinc(&blk.full[slot]);
  }
}

// The producer where A comes by TMA as well (the convolution's im2col load), on one thread: per K
// tile, FULL's one arrival (kWgmmaFullArrivalsTma) with the expect_tx of A's and B's bytes, then
// load_a(tile, full) starting A's load on that barrier, then B's.
template <Tf32Products kProducts, int kBN, class LoadA>
__device__ __forceinline__ void wgmma_produce_by_tma(const WgmmaMaps& maps,
                                                     const WgmmaBlock<kBN>& blk, int n0,
                                                     int batch_b, LoadA&& load_a) {
  constexpr int kStages = WgmmaTile<kBN>::kStages;
  RingPosition<kStages> at = blk.start;
  for (int kt = 0; kt < blk.k_tiles; ++kt, at.next()) {
    const int slot = at.slot;
    if (blk.first + kt >= kStages) mbarrier_wait(&blk.empty[slot], at.lap_parity ^ 1);
    mbarrier_arrive_expect_tx(&blk.full[slot], kWgmmaTileBytes + kWgmmaBBytes<kProducts, kBN>);
    load_a(blk.raw_a(slot), &blk.full[slot]);
    wgmma_load_b<kProducts>(maps, blk, slot, blk.k_begin + kt * kGemmBK, n0, batch_b);
  }
}

// Where a consumer's wgmmas sum: the chunk sums `part` where kChunked, else `acc` itself.
template <bool kChunked, int kPart, int kAcc>
__device__ __forceinline__ auto& wgmma_sums(float (&part)[kPart], float (&acc)[kAcc]) {
  if constexpr (kChunked)
    return part;
  else
    return acc;
}

// A consumer warpgroup over the block's K range into `acc` (this thread's kBN / 2 accumulators),
// as the header describes. `row`: the thread's first tile row; t = lane % 4.
template <Tf32Products kProducts, int kBN>
__device__ __forceinline__ void wgmma_consume(const WgmmaBlock<kBN>& blk, int chunk_tiles,
                                              int warpgroup, int row, int t, int lane,
                                              float (&acc)[kBN / 2]) {
  using Tile = WgmmaTile<kBN>;
  constexpr int kStages = Tile::kStages, kAcc = Tile::kAcc;
  static_assert(!Tile::kOneProductOnly || kProducts == Tf32Products::one,
                "the 256-wide tile makes one product");
  // Three products sum chunks of chunk_tiles K tiles in `part` and add each into acc; one product
  // sums the whole K range in the tensor cores, as cuBLAS's and cuDNN's TF32 kernels do (the
  // track's reference): straight into acc, which the caller started at zero (no chunk sums, so no
  // drain before the range's end, and no part registers, which the 256-wide tile has no room for).
  constexpr bool kChunked = kProducts == Tf32Products::three;
  float chunk_part[kChunked ? kAcc : 1];
  auto& part = wgmma_sums<kChunked>(chunk_part, acc);
  uint32_t big0[4][4], small0[4][4], big1[4][4], small1[4][4];
  // Tiles [0, released) have given their slot back; before step kt, released is kt - 1 or kt
  // (a chunk's end releases its own tile too).
  int released = 0;
  RingPosition<kStages> at = blk.start, release_at = blk.start;  // tile kt's; tile released's
  auto release_next = [&] {
    if (lane == 0) mbarrier_arrive(&blk.empty[release_at.slot]);
    release_at.next();
    ++released;
  };
  // Slot 0's descriptors; slot s's lie s · kStageBytes further (the address field counts 16 bytes).
  const uint64_t big_b0 = wgmma_descriptor(blk.big_b(0));
  const uint64_t small_b0 = kChunked ? wgmma_descriptor(blk.small_b(0)) : 0;
  // Where tile kt lies in its chunk of chunk_tiles: the warpgroups' chunks are half a chunk apart.
  int phase = warpgroup * (chunk_tiles / 2);
  // Tile kt with A registers `big`/`small`; `prev_*` hold tile kt - 1's (maybe still read).
  auto step = [&](int kt, uint32_t(&big)[4][4], uint32_t(&small)[4][4],
                  uint32_t(&prev_big)[4][4], uint32_t(&prev_small)[4][4]) {
    const int slot = at.slot;
    mbarrier_wait(&blk.full[slot], at.lap_parity);
    load_a_fragments<kProducts>(blk.raw_a(slot), row, t, big, small);
    const bool chunk_start = kt == 0 || (kChunked && phase == 0);
    const bool chunk_end = kt + 1 == blk.k_tiles || (kChunked && phase == chunk_tiles - 1);
    const uint64_t slot_step = static_cast<uint64_t>(slot) * (Tile::kStageBytes >> 4);
    issue_tile_products<kBN, kProducts>(part, big, small, big_b0 + slot_step,
                                        small_b0 + slot_step, chunk_start ? 0 : 1);
    at.next();
    if (++phase == chunk_tiles) phase = 0;
    if (chunk_end) {
      wgmma_wait<0>();
      pin_all(prev_big), pin_all(big);
      if constexpr (kChunked) pin_all(prev_small), pin_all(small);
#pragma unroll
      for (int e = 0; e < kAcc; ++e) {
        pin_register(part[e]);
        if constexpr (kChunked) acc[e] += part[e];  // round to nearest, on the CUDA cores
      }
      if (released < kt) release_next();
      release_next();
    } else {
      wgmma_wait<1>();  // tile kt - 1's batch is done
      pin_all(prev_big);
      if constexpr (kChunked) pin_all(prev_small);
      if (released < kt) release_next();
    }
  };
  for (int kt = 0; kt < blk.k_tiles; kt += 2) {
    step(kt, big0, small0, big1, small1);
    if (kt + 1 < blk.k_tiles) step(kt + 1, big1, small1, big0, small0);
  }
  wgmma_wait<0>();  // done already (the last tile ends a chunk); says so to the compiler
}

// The block's ring in the dynamic shared memory (aligned to 1024 bytes, as SWIZZLE_128B needs)
// and its barriers, initialised, for the K range [k_begin, k_end); FULL expects full_arrivals per
// phase (kWgmmaFullArrivalsCopying where the producer warpgroup copies A, kWgmmaFullArrivalsTma
// where TMA loads it). Every thread calls it: it ends with a block barrier.
template <int kBN>
__device__ __forceinline__ WgmmaBlock<kBN> wgmma_block(
    float4* dynamic_smem, int k_begin, int k_end, int full_arrivals = kWgmmaFullArrivalsCopying) {
  constexpr int kStages = WgmmaTile<kBN>::kStages;
  __shared__ uint64_t full[kStages], empty[kStages];
  WgmmaBlock<kBN> blk;
  // Aligned by pointer arithmetic, not through an integer: the compiler then still knows the
  // tiles are shared memory and reads A with ld.shared rather than generic loads.
  uint8_t* const smem = reinterpret_cast<uint8_t*>(dynamic_smem);
  blk.base = smem + ((1024 - (smem_address(smem) & 1023)) & 1023);
  blk.full = full, blk.empty = empty;
  blk.k_tiles = blk.first = 0;
  blk.advance(k_begin, k_end);
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbarrier_init(&full[s], full_arrivals);
      mbarrier_init(&empty[s], kWgmmaConsumerThreads / 32);  // a consumer warp each
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  return blk;
}

// The thread's warp, through a shuffle so the compiler knows it warp-uniform (a wgmma on a path it
// deems divergent is serialised). Warps from kWgmmaConsumerThreads / 32 on are the producers.
__device__ __forceinline__ int wgmma_warp() {
  return __shfl_sync(0xFFFFFFFFu, static_cast<int>(threadIdx.x) / 32, 0);
}
// The register split between the warpgroups (kWgmmaProducerRegisters): once per thread, as its
// role starts.
__device__ __forceinline__ void wgmma_become_producer() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kWgmmaProducerRegisters));
}
__device__ __forceinline__ void wgmma_become_consumer() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kWgmmaConsumerRegisters));
}

// Calls pair(half, tile_column, sum, next) for each pair of a consumer thread's accumulators `acc`
// (references: pair may change them), which lie in columns tile_column (even) and tile_column + 1
// of its tile row `row` + 8·half. Accumulator e = 4j + r: half r / 2, column 8j + 2t + r % 2
// (t = lane % 4). Unrolled: `pair` should be short and branch on uniform values at most, as the
// epilogues below are.
template <int kAcc, class Pair>
__device__ __forceinline__ void for_each_accumulator_pair(float (&acc)[kAcc], int t, Pair&& pair) {
#pragma unroll
  for (int j = 0; j < kAcc / 4; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half)
      pair(half, j * 8 + 2 * t, acc[4 * j + 2 * half], acc[4 * j + 2 * half + 1]);
}

// The bias (bias[column], columns counted from the tile's n0, those past n left alone) and the
// activation of `epilogue` on a consumer thread's accumulators, in place: each one straight run
// over the registers behind a uniform branch. The epilogues are written this way because a
// branchy store per accumulator pair (32 inlined copies) came to 7,700 instructions in the GEMM
// kernel, whose instruction-cache misses stalled the consumers twice as long as their
// tensor-core work on a 1x1 convolution's K = 112 GEMM (ncu on an H200).
template <int kAcc>
__device__ __forceinline__ void apply_bias_activation(float (&acc)[kAcc], int t,
                                                      MatmulEpilogue epilogue, const float* bias,
                                                      int n0, int n) {
  if (epilogue_has_bias(epilogue))
    for_each_accumulator_pair(acc, t, [&](int, int column, float& sum, float& next) {
      const int col = n0 + column;
      if (col < n) sum += bias[col];
      if (col + 1 < n) next += bias[col + 1];
    });
  if (epilogue == MatmulEpilogue::relu || epilogue == MatmulEpilogue::bias_relu) {
#pragma unroll
    for (int e = 0; e < kAcc; ++e) acc[e] = fmaxf(acc[e], 0.0f);
  } else if (epilogue == MatmulEpilogue::gelu || epilogue == MatmulEpilogue::bias_gelu) {
#pragma unroll
    for (int e = 0; e < kAcc; ++e) acc[e] = gemm_activation(acc[e], MatmulEpilogue::gelu);
  }
}

// A consumer thread (warp < 8, after wgmma_become_consumer): runs its warpgroup's products over
// the block's K range, the split-K reduction when p.splits > 1, and then, in the block that
// stores the tile, finish(acc, row, t): its kBN / 2 sums (for_each_accumulator_pair says where
// each lies), its first tile row and t = lane % 4.
template <Tf32Products kProducts, int kBN, class Finish>
__device__ __forceinline__ void wgmma_consume_tile(const WgmmaBlock<kBN>& blk,
                                                   const GemmTf32x3Args& p,
                                                   const GemmTileCoord& tile, int warp,
                                                   Finish&& finish) {
  constexpr int kAcc = WgmmaTile<kBN>::kAcc;
  const int lane = threadIdx.x & 31, warpgroup = warp / 4, g = lane >> 2, t = lane & 3;
  const int row = warpgroup * 64 + (warp % 4) * 16 + g;  // the thread's first tile row
  float acc[kAcc] = {};
  wgmma_consume<kProducts>(blk, p.chunk_tiles, warpgroup, row, t, lane, acc);
  // A partial tile holds 64 sums per thread: the 256-wide tile runs unsplit (its launcher's plan).
  if constexpr (kAcc > kGemmAccPerThread) {
    (void)tile;
  } else if (p.splits > 1) {
    const int64_t index = (int64_t{tile.batch} * p.tiles_m + tile.tm) * p.tiles_n + tile.tn;
    auto consumers_sync = [] {
      asm volatile("bar.sync 1, %0;\n" ::"n"(kWgmmaConsumerThreads) : "memory");
    };
    if (!reduce_splits<kAcc>(p, index, tile.split, [&](int e) -> float& { return acc[e]; },
                             consumers_sync))
      return;
  }
  finish(acc, row, t);
}

// GemmTf32x3's epilogue on a consumer thread's sums of the output tile at (m0, n0) of `batch`
// (row: its first tile row): D = act(alpha·sum + beta·C + bias), as apply_bias_activation says
// why: straight runs, the edges predicates. Two columns per store where p.pair_stores.
template <int kAcc>
__device__ __forceinline__ void store_gemm_tile(const GemmTf32x3Args& p, int batch, int m0, int n0,
                                                int row, int t, float (&acc)[kAcc]) {
  const int64_t corner = batch * p.stride_c + int64_t{m0} * p.ldc + n0;
  // Whether the tile element (r, column) lies in D.
  auto inside = [&](int r, int column) { return m0 + r < p.m && n0 + column < p.n; };
#pragma unroll
  for (int e = 0; e < kAcc; ++e) acc[e] *= p.alpha;
  if (p.accumulate) {
    const float* c = p.c + corner;
    for_each_accumulator_pair(acc, t, [&](int half, int column, float& sum, float& next) {
      const int r = row + 8 * half;
      const int64_t at = int64_t{r} * p.ldc + column;
      if (inside(r, column)) sum += p.beta * c[at];
      if (inside(r, column + 1)) next += p.beta * c[at + 1];
    });
  }
  apply_bias_activation(acc, t, p.epilogue, p.bias, n0, p.n);
  float* const d = p.d + corner;
  if (p.pair_stores) {  // n even: a pair lies in D or outside it
    for_each_accumulator_pair(acc, t, [&](int half, int column, float& sum, float& next) {
      const int r = row + 8 * half;
      if (inside(r, column))
        *reinterpret_cast<float2*>(d + int64_t{r} * p.ldc + column) = make_float2(sum, next);
    });
  } else {
    for_each_accumulator_pair(acc, t, [&](int half, int column, float& sum, float& next) {
      const int r = row + 8 * half;
      const int64_t at = int64_t{r} * p.ldc + column;
      if (inside(r, column)) d[at] = sum;
      if (inside(r, column + 1)) d[at + 1] = next;
    });
  }
}

#endif  // STITCH_GEMM_WGMMA

// One kernel for every operand layout (p.trans_b and p.vec4 are uniform run-time branches: one
// instantiation keeps a program's sm_90a build short). The template parameter only gives the
// kernel one definition across translation units.
//
// Persistent: a block per SM works through the output tiles (and K splits) blockIdx.x,
// blockIdx.x + gridDim.x, ... in gemm_tile_coord's grouped order, one ring across them. The
// producers run ahead into the next tile's K tiles as the consumers free slots, so its loads
// overlap this tile's epilogue and the block's start-up is paid once: with one block per SM a
// tile per block left the tensor cores idle through every epilogue and launch (a 1x1
// convolution's GEMM with K = 112, 10 x 672 x 50176: 2.40 ms on an H200 against a 0.46 ms floor).
template <int kUnused = 0>
__global__ void __launch_bounds__(kWgmmaThreads, 1)
    gemm_tf32x3_wgmma_kernel(GemmTf32x3Args p, const __grid_constant__ WgmmaMaps maps) {
#if defined(STITCH_GEMM_WGMMA)
  extern __shared__ float4 wgmma_smem[];
  WgmmaBlock<kGemmBN> blk = wgmma_block<kGemmBN>(wgmma_smem, 0, 0);
  const int tiles = p.tiles_m * p.tiles_n;
  // The output tile of `unit`, with the block's K range moved on to it.
  auto next_tile = [&](int unit) {
    const GemmTileCoord tile = gemm_tile_coord(p, unit % tiles, unit / tiles);
    const int k_begin = tile.split * p.split_k;
    blk.advance(k_begin, min(p.k, k_begin + p.split_k));
    return tile;
  };
  const int warp = wgmma_warp();
  if (warp >= kWgmmaConsumerThreads / 32) {
    wgmma_become_producer();
    const int ptid = threadIdx.x - kWgmmaConsumerThreads;
    for (int unit = blockIdx.x; unit < p.units; unit += gridDim.x) {
      const GemmTileCoord tile = next_tile(unit);
      const int m0 = tile.tm * kGemmBM;
      const float* a = p.a + tile.batch * p.stride_a + int64_t{m0} * p.lda;
      const int rows_a = min(kGemmBM, p.m - m0);
      wgmma_produce<Tf32Products::three>(
          maps, blk, tile.tn * kGemmBN, p.stride_b == 0 ? 0 : tile.batch, ptid,
          [&](float* s, int k0) {
            if (p.vec4)
              load_a_tile<true>(s, a, p.lda, rows_a, k0, blk.k_end, ptid);
            else
              load_a_tile<false>(s, a, p.lda, rows_a, k0, blk.k_end, ptid);
          });
    }
    cp_async_wait<0>();
    return;
  }
  wgmma_become_consumer();
#pragma unroll 1
  for (int unit = blockIdx.x; unit < p.units; unit += gridDim.x) {
    const GemmTileCoord tile = next_tile(unit);
    const int m0 = tile.tm * kGemmBM, n0 = tile.tn * kGemmBN;
    wgmma_consume_tile<Tf32Products::three>(blk, p, tile, warp, [&](auto& acc, int row, int t) {
      store_gemm_tile(p, tile.batch, m0, n0, row, t, acc);
    });
  }
#else
  (void)p, (void)maps;
#endif
}

inline cudaError_t allow_gemm_tf32x3_wgmma_smem() {
  return cudaFuncSetAttribute(gemm_tf32x3_wgmma_kernel<>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(WgmmaTile<kGemmBN>::kSmemBytes));
}

// What cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col refuse in a map of x's extents (rank
// dims in elements, rank - 1 strides in bytes), or "": a dimension past 2^32 elements, a stride
// not a multiple of 16 bytes below 2^40.
inline const char* tensor_map_extent_problem(int rank, const uint64_t* dims,
                                             const uint64_t* strides) {
  for (int d = 0; d < rank; ++d)
    if (dims[d] > (uint64_t{1} << 32)) return "a dimension of x past 2^32 elements";
  for (int d = 0; d + 1 < rank; ++d)
    if (strides[d] % 16 != 0 || strides[d] >= (uint64_t{1} << 40))
      return "a stride of x not a multiple of 16 bytes below 2^40";
  return "";
}

// The driver's tensor-map encoder `name` ("cuTensorMapEncodeTiled", "cuTensorMapEncodeIm2col":
// CUDA 12.0's signatures, cudaTypedefs.h's PFN_*_v12000) through the runtime, so that nothing
// links libcuda; null, with `error` set, where the driver lacks it.
inline void* tensor_map_encoder(const char* name, std::string& error) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &entry, 12000, cudaEnableDefault, &found) !=
          cudaSuccess ||
      found != cudaDriverEntryPointSuccess || entry == nullptr) {
    (void)cudaGetLastError();
    error = std::string("the driver has no ") + name;
    return nullptr;
  }
  return entry;
}

}  // namespace detail

// Whether GemmTf32x3 can run its wgmma kernel on the current device: code built for sm_90a
// running on it (see gemm_tf32x3_kernels_built).
inline bool gemm_tf32x3_wgmma_available(std::string& error) {
  return (gemm_tf32x3_kernels_built(error) & detail::kGemmBuiltWgmma) != 0;
}

// The split copies of B the wgmma kernel reads (layout: the header), with their TMA descriptors.
// init allocates them for `batches` x n x k (batches 1 for a B shared by every batch), loaded in
// tiles of tile_n rows (the kernel's kBN); split fills them from B on a stream (capturable: a
// kernel launch). Tf32Products::one reads only the big copy: init(..., products) then allocates
// and split fills that one alone.
class WgmmaSplitB {
 public:
  WgmmaSplitB() = default;
  ~WgmmaSplitB() { release(); }
  WgmmaSplitB(const WgmmaSplitB&) = delete;
  WgmmaSplitB& operator=(const WgmmaSplitB&) = delete;

  int init(int64_t batches, int64_t n, int64_t k, std::string& error,
           int tile_n = detail::kGemmBN, Tf32Products products = Tf32Products::three) {
    release();
    batches_ = batches, n_ = n, k_ = k, k32_ = (k + kTile - 1) / kTile * kTile;
    const size_t bytes = static_cast<size_t>(batches_ * n_ * k32_) * sizeof(uint32_t);
    const int copies = products == Tf32Products::one ? 1 : 2;
    if (cudaMalloc(&buffer_, copies * bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      buffer_ = nullptr;
      error = "GemmTf32x3: no device memory for the split copies of B (" +
              std::to_string(copies * bytes >> 20) + " MiB)";
      return STITCH_ERROR_CUDA;
    }
    small_ = copies == 2 ? buffer_ + bytes / sizeof(uint32_t) : nullptr;
    const auto encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(
        detail::tensor_map_encoder("cuTensorMapEncodeTiled", error));
    if (encode == nullptr) {
      error = "GemmTf32x3: " + error;
      return STITCH_ERROR_CUDA;
    }
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(k32_), static_cast<cuuint64_t>(n_),
                                static_cast<cuuint64_t>(batches_)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(k32_ * 4),
                                   static_cast<cuuint64_t>(n_ * k32_ * 4)};
    const cuuint32_t box[3] = {kTile, static_cast<cuuint32_t>(tile_n), 1}, unit[3] = {1, 1, 1};
    maps_ = {};
    for (int copy = 0; copy < copies; ++copy) {
      CUtensorMap* map = copy == 0 ? &maps_.big : &maps_.small;
      const CUresult r = encode(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 3,
                                copy == 0 ? buffer_ : small_, dims, strides, box, unit,
                                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        error = "GemmTf32x3: cuTensorMapEncodeTiled failed (" + std::to_string(int{r}) + ")";
        return STITCH_ERROR_CUDA;
      }
    }
    return STITCH_OK;
  }

  // B as the GEMM reads it (MatmulShape's b, ldb, stride_b, trans_b) into the copies; k_channels
  // > 0: K reordered (split_b_for_wgmma says how), k_used of the channels B's (0: all).
  int split(const float* b, int64_t ldb, int64_t stride_b, bool trans_b, cudaStream_t stream,
            std::string& error, int64_t k_channels = 0, int64_t k_used = 0) const {
    const int64_t stride = batches_ > 1 ? stride_b : 0;
    if (k_used == 0) k_used = k_channels;
    if (!trans_b && batches_ <= 65535 && k32_ / 32 <= 65535) {
      const dim3 grid(static_cast<unsigned>((n_ + 31) / 32), static_cast<unsigned>(k32_ / 32),
                      static_cast<unsigned>(batches_));
      detail::split_b_for_wgmma_transposing<>
          <<<grid, dim3(32, detail::kSplitTransposeRows), 0, stream>>>(
              b, ldb, stride, n_, k_, k32_, k_channels, k_used, buffer_, small_);
    } else {
      const int64_t total = batches_ * n_ * k32_;
      const int blocks = static_cast<int>(std::min<int64_t>((total + 255) / 256, 8192));
      detail::split_b_for_wgmma<><<<blocks, 256, 0, stream>>>(
          b, ldb, stride, trans_b, batches_, n_, k_, k32_, k_channels, k_used, buffer_, small_);
    }
    const cudaError_t launched = cudaGetLastError();
    if (launched == cudaSuccess) return STITCH_OK;
    error = std::string("GemmTf32x3: splitting B failed: ") + cudaGetErrorString(launched);
    return STITCH_ERROR_CUDA;
  }

  const detail::WgmmaMaps& maps() const { return maps_; }

 private:
  static constexpr int kTile = detail::kGemmBK;
  void release() {
    if (buffer_ != nullptr) cudaFree(buffer_);
    buffer_ = small_ = nullptr;
  }
  int64_t batches_ = 0, n_ = 0, k_ = 0, k32_ = 0;
  uint32_t* buffer_ = nullptr;  // big, then small
  uint32_t* small_ = nullptr;
  detail::WgmmaMaps maps_{};
};

}  // namespace stitch::kernels
