// Split-precision 3xTF32 GEMM on Hopper's warpgroup tensor cores (wgmma.mma_async, sm_90a only):
// the same arithmetic, tile, operands, split K and epilogue as the mma.sync kernel of
// gemm_tf32x3.cuh (GemmTf32x3 picks this one on a compute capability 9.0 device when the program
// was built for sm_90a; gemm_tf32x3_kernels_built of gemm_tf32x3_common.cuh says so at init).
// Built for any other target the kernel body is empty and never launched.
//
// Why wgmma: on an H200, mma.sync reaches about half of the dense TF32 peak (the mma.sync kernel:
// 31% of the 3xTF32 floor); cuBLASLt's TF32 kernels, which use wgmma, about twice that. This
// kernel's own rate is not measured yet (tests/kernels/gemm_tf32x3_bench.cu --fused).
//
// Block: 256 threads = 2 warpgroups, a 128 x 128 output tile, each warpgroup 64 rows x 128
// columns (one m64n128k8 wgmma per K step of 8). Per K tile of 32 and warpgroup: 12 wgmmas
// (small_a·big_b, big_a·small_b, big_a·big_b for 4 K steps, smallest first) into a tile-sum
// register block `part` (scale-d 0 on the first: the sum starts from zero), then, on the CUDA
// cores with round-to-nearest, acc += part — so the tensor cores' truncating accumulation never
// spans more than one K tile (96 products), as in the mma.sync kernel.
//
// Operands: A's 64 x 8 slices come from registers, split where they are read (the A fragment
// layout of wgmma .tf32 is mma.sync m16n8k8's, per warp 16 rows); B from shared memory, split once
// per K tile by all 256 threads into a big and a small tile in the layout wgmma reads (K-major,
// 128-byte rows of 32 TF32, 16-byte chunks XOR-swizzled by row % 8: SWIZZLE_128B). Both sides
// see the K tile's 32 columns in the same permuted order (K step kk, slot s < 4 <- column 8s + 2kk,
// slot s + 4 <- 8s + 2kk + 1), so a thread reads its A values as two 16-byte loads per row.
//
// Pipeline: the raw fp32 tiles (A [128][32] swizzled as above; B [128][32] likewise, or a [k,n]
// B as a plain [32][128]) arrive in a kWgmmaStages-deep cp.async ring issued by every thread
// (16 bytes, or 4 when the operands are not 16-byte aligned; zeros past the edges), three K tiles
// ahead — the loads are light (32 KiB per 6 MFLOP tile step, ~30 GB/s per SM at the tensor rate),
// so no producer warpgroup. Two split B buffers alternate; named barriers of 256 threads order
// them without coupling the warpgroups to each other's tensor-core batches. Warpgroup w waits
// (bar.sync) on its own two, the other warpgroup only arrives (bar.arrive) at them — a thread
// never both arrives and waits at one barrier in one round:
//   READY[w] (ids 1, 2): split tile t is complete. The other warpgroup arrives once its share is
//     written; w's own share precedes its wait. w then issues batch t.
//   FREE[w] (ids 3, 4): the raw copies of tile t+1 landed and batch t-1 is done (each thread
//     waited for both), so w may split tile t+1 into the buffer batch t-1 read.
// The other warpgroup arrives at FREE[w] for tile t only after passing its READY for t, which
// needs w's split of t, made after w passed FREE[w] for t-1; likewise for READY: neither barrier
// sees an arrival of the next round before the current one completes.
// A warpgroup waits for its own batch t after splitting tile t+1, adds the tile sum, reads its A
// fragments of tile t+1 and issues batch t+1 — while the other warpgroup's batch t runs.
//
// Budget per block (one per SM): shared memory 1 KiB alignment + 4 stages x 32 KiB raw + 2 x 32
// KiB split = 193 KiB of the 227 KiB; registers 64 acc + 64 part + 32 A + addressing: 234 by
// ptxas (nvcc 13.0), no spills, under the 255 that __launch_bounds__(256, 1) allows (the spill
// check: tests/codegen/program_golden_test.cc).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "gemm_tf32x3_common.cuh"

namespace stitch::kernels {

namespace detail {

inline constexpr int kWgmmaStages = 4;
inline constexpr int kWgmmaTileFloats = kGemmBM * kGemmBK;  // one raw or split 128 x 32 tile
inline constexpr int kWgmmaTileBytes = kWgmmaTileFloats * 4;
inline constexpr size_t kWgmmaSmemBytes =
    1024 + size_t{kWgmmaStages} * 2 * kWgmmaTileBytes + 2 * 2 * kWgmmaTileBytes;
inline constexpr int kWgmmaBarrierThreads = kGemmThreads;  // a warpgroup waits, the other arrives
static_assert(kGemmBM == 128 && kGemmBN == 128 && kGemmBK == 32 && kGemmThreads == 256,
              "the wgmma kernel's thread and swizzle mapping is written for this tile");

#if defined(STITCH_GEMM_WGMMA)

__device__ __forceinline__ void named_barrier_sync(int id) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "n"(kWgmmaBarrierThreads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(int id) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "n"(kWgmmaBarrierThreads) : "memory");
}
// Ordinary shared-memory stores made visible to the tensor cores' (async proxy) reads.
__device__ __forceinline__ void fence_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_wait_all() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
// Pins a register the asynchronous wgmma reads or writes: the compiler may neither read it before
// the preceding wgmma_wait_all nor reuse it earlier.
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

// D (64 x 128, FP32, this warpgroup's part) = A (64 x 8, TF32 registers) · B (8 x 128, TF32, a
// K-major 128-byte-swizzled shared tile at desc_b) + (kAccumulate ? D : 0). Asynchronous: D and A
// must not be touched until a wgmma_wait_all.
template <int kAccumulate>
__device__ __forceinline__ void wgmma_m64n128k8(float (&d)[64], const uint32_t (&a)[4],
                                                uint64_t desc_b) {
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
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(kAccumulate), "l"(desc_b));
}

// 128 rows of K-contiguous source (row r at src + r·ld; `rows` valid), K columns [k0, k_end) of
// the 32 from k0, into s[128][32] with 16-byte chunk c of row r at chunk c ^ (r % 8); zeros
// elsewhere.
template <bool kVec4>
__device__ __forceinline__ void load_rows_swizzled(float* s, const float* src, int64_t ld, int rows,
                                                   int k0, int k_end, int tid) {
  if constexpr (kVec4) {
#pragma unroll
    for (int i = 0; i < kWgmmaTileFloats / 4 / kGemmThreads; ++i) {
      const int idx = tid + i * kGemmThreads, r = idx >> 3, c = idx & 7;
      const bool ok = r < rows && k0 + c * 4 < k_end;
      cp_async_16(s + r * 32 + ((c ^ (r & 7)) << 2), ok ? src + r * ld + k0 + c * 4 : src, ok);
    }
  } else {  // not unrolled: the rare unaligned path must not raise the kernel's register count
#pragma unroll 1
    for (int i = 0; i < kWgmmaTileFloats / kGemmThreads; ++i) {
      const int idx = tid + i * kGemmThreads, r = idx >> 5, c = idx & 31;
      const bool ok = r < rows && k0 + c < k_end;
      cp_async_4(s + r * 32 + (((c >> 2) ^ (r & 7)) << 2) + (c & 3),
                 ok ? src + r * ld + k0 + c : src, ok);
    }
  }
}

// K rows [k0, k_end) of the 32 from k0 of an N-contiguous source (row k at src + k·ld), `cols`
// valid columns, into a plain s[32][128]; zeros elsewhere.
template <bool kVec4>
__device__ __forceinline__ void load_k_rows(float* s, const float* src, int64_t ld, int cols,
                                            int k0, int k_end, int tid) {
  if constexpr (kVec4) {
#pragma unroll
    for (int i = 0; i < kWgmmaTileFloats / 4 / kGemmThreads; ++i) {
      const int idx = tid + i * kGemmThreads, r = idx >> 5, c = (idx & 31) * 4;
      const bool ok = k0 + r < k_end && c < cols;
      cp_async_16(s + r * 128 + c, ok ? src + (k0 + r) * ld + c : src, ok);
    }
  } else {  // not unrolled: the rare unaligned path must not raise the kernel's register count
#pragma unroll 1
    for (int i = 0; i < kWgmmaTileFloats / kGemmThreads; ++i) {
      const int idx = tid + i * kGemmThreads, r = idx >> 7, c = idx & 127;
      const bool ok = k0 + r < k_end && c < cols;
      cp_async_4(s + r * 128 + c, ok ? src + (k0 + r) * ld + c : src, ok);
    }
  }
}

// The raw B tile into its big and small TF32 tiles (K-major, SWIZZLE_128B, K permuted as the
// header says: chunk c of a row holds the tile's columns c, c + 8, c + 16, c + 24). Thread
// (n = tid % 128, h = tid / 128) writes chunks 4h .. 4h + 3 of row n: from a raw [n][32] tile the
// raw chunks h, h + 2, h + 4, h + 6, element q of each.
template <bool kTransB>
__device__ __forceinline__ void split_b_tile(const float* raw, uint8_t* big, uint8_t* small,
                                             int tid) {
  const int n = tid & 127, h = tid >> 7, swizzle = n & 7;
  float v[4][4];  // v[e][q]: the tile's column 4h + q + 8e of row n
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    if constexpr (kTransB) {
      const float4 x =
          *reinterpret_cast<const float4*>(raw + n * 32 + (((h + 2 * e) ^ swizzle) << 2));
      v[e][0] = x.x, v[e][1] = x.y, v[e][2] = x.z, v[e][3] = x.w;
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q)
        v[e][q] = raw[(4 * h + q + 8 * e) * 128 + n];
    }
  }
#pragma unroll
  for (int q = 0; q < 4; ++q) {
    uint4 b, s;
    split_tf32(v[0][q], b.x, s.x);
    split_tf32(v[1][q], b.y, s.y);
    split_tf32(v[2][q], b.z, s.z);
    split_tf32(v[3][q], b.w, s.w);
    const int offset = n * 128 + (((4 * h + q) ^ swizzle) << 4);
    *reinterpret_cast<uint4*>(big + offset) = b;
    *reinterpret_cast<uint4*>(small + offset) = s;
  }
}

// This thread's A fragments of a K tile, split: rows `row` and row + 8 of the raw A tile (row % 8
// = the lane's group g), columns 8t .. 8t + 7 (t = lane % 4), so that K step kk holds column
// 8t + 2kk in slot t and 8t + 2kk + 1 in slot t + 4: registers {(g, t), (g + 8, t), (g, t + 4),
// (g + 8, t + 4)} as wgmma's .tf32 A fragment orders them.
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
#pragma unroll
  for (int kk = 0; kk < 4; ++kk) {
    split_tf32(upper[2 * kk], big[kk][0], small[kk][0]);
    split_tf32(lower[2 * kk], big[kk][1], small[kk][1]);
    split_tf32(upper[2 * kk + 1], big[kk][2], small[kk][2]);
    split_tf32(lower[2 * kk + 1], big[kk][3], small[kk][3]);
  }
}

// One K tile's 12 wgmmas of this warpgroup into `part`, smallest products first.
__device__ __forceinline__ void issue_tile_products(float (&part)[64],
                                                    const uint32_t (&a_big)[4][4],
                                                    const uint32_t (&a_small)[4][4], uint64_t b_big,
                                                    uint64_t b_small) {
  wgmma_fence();
  wgmma_m64n128k8<0>(part, a_small[0], b_big);
#pragma unroll
  for (int kk = 1; kk < 4; ++kk)
    wgmma_m64n128k8<1>(part, a_small[kk], b_big + 2 * kk);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    wgmma_m64n128k8<1>(part, a_big[kk], b_small + 2 * kk);
#pragma unroll
  for (int kk = 0; kk < 4; ++kk)
    wgmma_m64n128k8<1>(part, a_big[kk], b_big + 2 * kk);
  wgmma_commit();
}

// Where a block's operands and shared tiles are (raw ring and split buffers as the header says).
struct WgmmaBlock {
  uint8_t* base;  // 1024-byte aligned
  const float *a, *b;
  int rows_a, cols_b, k_begin, k_end, k_tiles;

  __device__ float* raw_a(int kt) const {
    return reinterpret_cast<float*>(base + (kt % kWgmmaStages) * 2 * kWgmmaTileBytes);
  }
  __device__ float* raw_b(int kt) const { return raw_a(kt) + kWgmmaTileFloats; }
  __device__ uint8_t* split_big(int kt) const {
    return base + (2 * kWgmmaStages + 2 * (kt & 1)) * kWgmmaTileBytes;
  }
  __device__ uint8_t* split_small(int kt) const { return split_big(kt) + kWgmmaTileBytes; }
};

// Raw tile kt of A and B into its ring slot (cp.async; the caller commits).
__device__ __forceinline__ void load_raw_tiles(const GemmTf32x3Args& p, const WgmmaBlock& blk,
                                               int kt, int tid) {
  const int k0 = blk.k_begin + kt * kGemmBK;
  if (p.vec4) {
    load_rows_swizzled<true>(blk.raw_a(kt), blk.a, p.lda, blk.rows_a, k0, blk.k_end, tid);
    if (p.trans_b)
      load_rows_swizzled<true>(blk.raw_b(kt), blk.b, p.ldb, blk.cols_b, k0, blk.k_end, tid);
    else
      load_k_rows<true>(blk.raw_b(kt), blk.b, p.ldb, blk.cols_b, k0, blk.k_end, tid);
  } else {
    load_rows_swizzled<false>(blk.raw_a(kt), blk.a, p.lda, blk.rows_a, k0, blk.k_end, tid);
    if (p.trans_b)
      load_rows_swizzled<false>(blk.raw_b(kt), blk.b, p.ldb, blk.cols_b, k0, blk.k_end, tid);
    else
      load_k_rows<false>(blk.raw_b(kt), blk.b, p.ldb, blk.cols_b, k0, blk.k_end, tid);
  }
}

// Raw B tile kt into split buffer kt % 2, made visible to the tensor cores, and this thread's
// arrival at the other warpgroup's READY.
__device__ __forceinline__ void split_and_publish(const GemmTf32x3Args& p, const WgmmaBlock& blk,
                                                  int kt, int tid) {
  if (p.trans_b)
    split_b_tile<true>(blk.raw_b(kt), blk.split_big(kt), blk.split_small(kt), tid);
  else
    split_b_tile<false>(blk.raw_b(kt), blk.split_big(kt), blk.split_small(kt), tid);
  fence_async_shared();
  named_barrier_arrive(2 - (tid >> 7));  // READY of the other warpgroup
}

// The block's K range into `acc` (this thread's 64 accumulators), as the header describes.
__device__ __forceinline__ void wgmma_mainloop(const GemmTf32x3Args& p, const WgmmaBlock& blk,
                                               int tid, int row, float (&acc)[64]) {
  const int t = tid & 3, warpgroup = tid >> 7;
  const int ready_barrier = 1 + warpgroup, free_barrier = 3 + warpgroup;
  float part[64];
  uint32_t a_big[4][4], a_small[4][4];
#pragma unroll
  for (int s = 0; s < kWgmmaStages - 1; ++s) {
    if (s < blk.k_tiles) load_raw_tiles(p, blk, s, tid);
    cp_async_commit();
  }
  if (blk.k_tiles > 0) {
    cp_async_wait<kWgmmaStages - 2>();
    __syncthreads();  // tile 0 landed for every thread
    split_and_publish(p, blk, 0, tid);
    load_a_fragments(blk.raw_a(0), row, t, a_big, a_small);
  }
  for (int kt = 0; kt < blk.k_tiles; ++kt) {
    named_barrier_sync(ready_barrier);  // split tile kt complete
    issue_tile_products(part, a_big, a_small, wgmma_descriptor(blk.split_big(kt)),
                        wgmma_descriptor(blk.split_small(kt)));
    // Into the slot of tile kt - 1: every thread is past its split (READY) and A reads.
    if (kt + kWgmmaStages - 1 < blk.k_tiles) load_raw_tiles(p, blk, kt + kWgmmaStages - 1, tid);
    cp_async_commit();
    if (kt + 1 < blk.k_tiles) {
      cp_async_wait<kWgmmaStages - 2>();    // this thread's copies of tile kt + 1 landed
      named_barrier_arrive(4 - warpgroup);  // FREE of the other warpgroup: my batch kt - 1 is done
      named_barrier_sync(free_barrier);
      split_and_publish(p, blk, kt + 1, tid);
    }
    wgmma_wait_all();
#pragma unroll
    for (int e = 0; e < 64; ++e) {
      pin_register(part[e]);
      acc[e] += part[e];  // round to nearest, on the CUDA cores
    }
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        pin_register(a_big[kk][r]);
        pin_register(a_small[kk][r]);
      }
    if (kt + 1 < blk.k_tiles) load_a_fragments(blk.raw_a(kt + 1), row, t, a_big, a_small);
  }
  cp_async_wait<0>();
}

#endif  // STITCH_GEMM_WGMMA

// One kernel for every operand layout (p.trans_b, p.vec4 are uniform run-time branches in the
// loads and the split: one instantiation keeps a program's sm_90a build short). The template
// parameter only gives the kernel one definition across translation units.
template <int kUnused = 0>
__global__ void __launch_bounds__(kGemmThreads, 1) gemm_tf32x3_wgmma_kernel(GemmTf32x3Args p) {
#if defined(STITCH_GEMM_WGMMA)
  extern __shared__ float4 wgmma_smem[];
  const int tid = threadIdx.x, lane = tid & 31;
  const int g = lane >> 2, t = lane & 3;
  const int row = (tid >> 7) * 64 + ((tid >> 5) & 3) * 16 + g;  // the thread's first tile row
  const GemmTileCoord tile = gemm_tile_coord(p);
  const int m0 = tile.tm * kGemmBM, n0 = tile.tn * kGemmBN;
  WgmmaBlock blk;
  blk.base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(wgmma_smem) + 1023) &
                                        ~uintptr_t{1023});
  blk.a = p.a + tile.batch * p.stride_a + int64_t{m0} * p.lda;
  blk.b = p.b + tile.batch * p.stride_b + (p.trans_b ? int64_t{n0} * p.ldb : n0);
  blk.rows_a = min(kGemmBM, p.m - m0);
  blk.cols_b = min(kGemmBN, p.n - n0);
  blk.k_begin = tile.split * p.split_k;
  blk.k_end = min(p.k, blk.k_begin + p.split_k);
  blk.k_tiles = (blk.k_end - blk.k_begin + kGemmBK - 1) / kGemmBK;
  float acc[64] = {};
  wgmma_mainloop(p, blk, tid, row, acc);
  if (p.splits > 1) {
    const int64_t index = (int64_t{tile.batch} * p.tiles_m + tile.tm) * p.tiles_n + tile.tn;
    if (!reduce_splits(p, index, tile.split, [&](int e) -> float& { return acc[e]; })) return;
  }
  // Accumulator e = 4j + r of a thread: row g + 8·(r / 2), column 8j + 2t + r % 2 of its warp's
  // 16 x 128 slice.
#pragma unroll
  for (int j = 0; j < 16; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r)
      store_gemm_output(p, tile.batch, m0 + row + (r >> 1) * 8, n0 + j * 8 + 2 * t + (r & 1),
                        acc[4 * j + r]);
#else
  (void)p;
#endif
}

inline cudaError_t allow_gemm_tf32x3_wgmma_smem() {
  return cudaFuncSetAttribute(gemm_tf32x3_wgmma_kernel<>,
                              cudaFuncAttributeMaxDynamicSharedMemorySize,
                              static_cast<int>(kWgmmaSmemBytes));
}

}  // namespace detail

// Whether GemmTf32x3 can run its wgmma kernel on the current device: code built for sm_90a
// running on it (see gemm_tf32x3_kernels_built).
inline bool gemm_tf32x3_wgmma_available(std::string& error) {
  return (gemm_tf32x3_kernels_built(error) & detail::kGemmBuiltWgmma) != 0;
}

}  // namespace stitch::kernels
