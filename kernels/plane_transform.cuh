// A convolution's input transform: what a kernel applies to each input element it reads from
// inside the input before the convolution, `float operator()(int64_t plane, float x) const`, plane
// = n * channels + c — a training-mode BatchNorm's normalisation and activation, fused into the
// convolution that consumes it (the planner's fusion rule F10). Padding stays zero: it pads the
// transformed input. The depthwise kernel applies it as it loads (conv_depthwise.cuh); the
// implicit-GEMM convolution as it copies x into the layout its gather reads
// (launch_transform_planes here, launch_channels_last in conv_igemm_tf32x3_wgmma.cuh), where x
// may also be a window of whole channels of a larger buffer (a cat's piece).
#pragma once

#include <cuda_runtime.h>  // float4, make_float4

#include <cstdint>

#include "runtime.cuh"

namespace stitch::kernels::detail {

// The identity, the default transform.
struct PlaneIdentity {
  __host__ __device__ float operator()(int64_t, float x) const { return x; }
};

template <class Transform>
__host__ __device__ inline float transform_input(const Transform& transform, int64_t plane,
                                                 float x) {
  return transform(plane, x);
}
template <class Transform>
__host__ __device__ inline float4 transform_input(const Transform& transform, int64_t plane,
                                                  float4 x) {
  return make_float4(transform(plane, x.x), transform(plane, x.y), transform(plane, x.z),
                     transform(plane, x.w));
}

// y[n][i] = transform(n · channels + i / plane_size, x[n · x_image + i]) for the image n of
// blockIdx.y (and grid.y apart) over its channels · plane_size elements, four at a time (float4:
// plane_size and x_image multiples of 4, both pointers 16-byte aligned) or one. y is dense.
template <bool kVec4, class Transform>
__global__ void transform_planes_kernel(const float* x, int64_t x_image, float* y, int64_t images,
                                        int64_t channels, int64_t plane_size,
                                        const Transform transform) {
  constexpr int kWidth = kVec4 ? 4 : 1;
  const int64_t per_image = channels * plane_size;
  for (int64_t n = blockIdx.y; n < images; n += gridDim.y) {
    const float* in = x + n * x_image;
    float* out = y + n * per_image;
    for (int64_t i = (blockIdx.x * int64_t{blockDim.x} + threadIdx.x) * kWidth; i < per_image;
         i += int64_t{gridDim.x} * blockDim.x * kWidth) {
      const int64_t plane = n * channels + i / plane_size;
      if constexpr (kVec4)
        *reinterpret_cast<float4*>(out + i) =
            transform_input(transform, plane, __ldg(reinterpret_cast<const float4*>(in + i)));
      else
        out[i] = transform(plane, __ldg(in + i));
    }
  }
}

// x [images][channels][plane_size] (images x_image floats apart: x may be a window of whole
// channels of a larger buffer) through `transform` into a dense y of that shape (an NCDHW
// tensor's planes are its (n, c) pairs). CUDA-graph capturable.
template <class Transform = PlaneIdentity>
inline cudaError_t launch_transform_planes(const float* x, int64_t x_image, float* y,
                                           int64_t images, int64_t channels, int64_t plane_size,
                                           cudaStream_t stream, const Transform& transform = {}) {
  constexpr int kBlock = 256;
  constexpr int64_t kMaxGridY = 65535;
  const int64_t per_image = channels * plane_size;
  if (images == 0 || per_image == 0) return cudaSuccess;
  const bool vec4 = plane_size % 4 == 0 && x_image % 4 == 0 &&
                    reinterpret_cast<uintptr_t>(x) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(y) % 16 == 0;
  const int64_t grid_y = images < kMaxGridY ? images : kMaxGridY;
  int64_t grid_x = 0;  // the device's resident blocks, shared out over the images in flight
  const cudaError_t sized =
      grid_stride_blocks((vec4 ? per_image / 4 : per_image) * grid_y, kBlock, grid_x);
  if (sized != cudaSuccess) return sized;
  grid_x = (grid_x + grid_y - 1) / grid_y;
  const dim3 grid(static_cast<unsigned>(grid_x), static_cast<unsigned>(grid_y));
  if (vec4)
    transform_planes_kernel<true, Transform>
        <<<grid, kBlock, 0, stream>>>(x, x_image, y, images, channels, plane_size, transform);
  else
    transform_planes_kernel<false, Transform>
        <<<grid, kBlock, 0, stream>>>(x, x_image, y, images, channels, plane_size, transform);
  return cudaGetLastError();
}

}  // namespace stitch::kernels::detail
