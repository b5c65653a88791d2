// Near-miss for row 12: split-precision 3xTF32 on tensor cores, accurate to FP32 and so allowed on
// the fp32 track. y = relu(x @ diag(scale) + shift): each warp computes one 16x8 tile of the
// product with mma.sync m16n8k8 (the diagonal makes K one 8-wide block), as three TF32 products of
// the operands split into big = tf32(v) and small = tf32(v - big): small*big + big*small + big*big.
#include "adversarial_common.h"

namespace {

__device__ __forceinline__ uint32_t to_tf32(float v) {
  uint32_t bits;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(bits) : "f"(v));
  return bits;
}

// d += a * b for one m16n8k8 tile; fragments in the PTX ISA's layout for .tf32.
__device__ __forceinline__ void mma_tf32(float (&d)[4], const uint32_t (&a)[4],
                                         const uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// rows % 16 == 0, features % 8 == 0, one warp per 16x8 output tile.
__global__ void scale_shift_relu_3xtf32(const float* __restrict__ x,
                                        const float* __restrict__ scale,
                                        const float* __restrict__ shift, float* __restrict__ y,
                                        int64_t rows, int64_t features) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t col_tiles = features / 8;
  if (warp >= (rows / 16) * col_tiles) return;  // whole warps leave together
  const int64_t row0 = (warp / col_tiles) * 16;
  const int64_t col0 = (warp % col_tiles) * 8;
  const int g = lane >> 2;  // groupID
  const int t = lane & 3;   // thread in group
  const float a[4] = {x[(row0 + g) * features + col0 + t], x[(row0 + g + 8) * features + col0 + t],
                      x[(row0 + g) * features + col0 + t + 4],
                      x[(row0 + g + 8) * features + col0 + t + 4]};
  // B = diag(scale[col0 .. col0+8)): b0 = B[t][g], b1 = B[t+4][g].
  const float b[2] = {t == g ? scale[col0 + g] : 0.0f, t + 4 == g ? scale[col0 + g] : 0.0f};
  uint32_t a_big[4], a_small[4], b_big[2], b_small[2];
  for (int i = 0; i < 4; ++i) {
    a_big[i] = to_tf32(a[i]);
    a_small[i] = to_tf32(a[i] - __uint_as_float(a_big[i]));
  }
  for (int i = 0; i < 2; ++i) {
    b_big[i] = to_tf32(b[i]);
    b_small[i] = to_tf32(b[i] - __uint_as_float(b_big[i]));
  }
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  mma_tf32(acc, a_small, b_big);  // small terms first: they are the ones rounding would lose
  mma_tf32(acc, a_big, b_small);
  mma_tf32(acc, a_big, b_big);
  for (int i = 0; i < 4; ++i) {
    const int64_t r = row0 + g + (i >= 2 ? 8 : 0);
    const int64_t c = col0 + 2 * t + (i & 1);
    const float v = acc[i] + shift[c];
    y[r * features + c] = v < 0.0f ? 0.0f : v;
  }
}

}  // namespace

extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  return adversarial::create_state(params, n_params, reinterpret_cast<adversarial::State**>(state));
}

extern "C" int stitch_forward(void* state_ptr, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  auto* state = static_cast<adversarial::State*>(state_ptr);
  const stitch_tensor& x = inputs[0];
  const int64_t rows = x.rank == 2 ? x.shape[0] : 0;
  if (x.rank != 2 || rows % 16 != 0 || state->features % 8 != 0)
    return adversarial::launch_scale_shift_relu(state, x, outputs[0],
                                                static_cast<cudaStream_t>(stream));
  const int64_t threads = (rows / 16) * (state->features / 8) * 32;
  scale_shift_relu_3xtf32<<<static_cast<unsigned>((threads + 255) / 256), 256, 0,
                            static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(x.data), state->scale, state->shift,
      static_cast<float*>(outputs[0].data), rows, state->features);
  return cudaGetLastError() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}
