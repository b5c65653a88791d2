// A convolution whose engine the planner's time model could not call with confidence (the
// subtask's tunable cudnn_alternative, src/plan/kernel_choice.h): the program holds both the
// project's kernel (ConvIgemmTf32x3, ConvDirect or their transposed forms) and a CudnnConv of the
// same shape, times the two at init on scratch operands and runs the faster one every forward —
// "engine chosen at init by heuristics plus a short timing", across engine families.
//
// The kernel applies the plan's kernel epilogue (bias, ReLU / GELU) as it stores; on cuDNN the
// same epilogue is one in-place pass over y after the convolution (conv_bias_activation), timed
// with it. Where the implicit GEMM applies an input transform as it copies x (a BatchNorm's
// normalisation fused in: ConvIgemmTf32x3::set_input_transform), cuDNN reads the transformed
// copy that one pass over x makes (transformed_input), timed with it too. Both write y in NCDHW,
// dense or as a window of whole channels of a cat's buffer (ConvShape::y_image, the kernel's
// output map; cuDNN's epilogue pass then runs over the window), or dense channels-last inside a
// plan's channels-last region (plan/layout.h), where they read x so too
// (ConvShape::x_channels_last / y_channels_last; the kernel's output map and
// set_input_channels_last).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

#include "conv.cuh"
#include "gemm_tf32x3_common.cuh"
#include "matmul.cuh"
#include "plane_transform.cuh"
#include "program_support.cuh"

namespace stitch::kernels {

namespace detail {

// y[n, c, p] = act(y[n, c, p] + bias[c]) (as MatmulEpilogue says) over y [batch][channels][plane]
// (kChannelsLast: [batch][plane][channels]), its images y_image floats apart (channels · plane
// where y is dense; more where it is a window of whole channels of a cat's buffer).
template <bool kChannelsLast>
__global__ void conv_bias_activation_kernel(float* y, const float* bias, MatmulEpilogue epilogue,
                                            int64_t channels, int64_t plane, int64_t y_image,
                                            int64_t count) {
  const int64_t image_floats = channels * plane;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t image = i / image_floats, at = i - image * image_floats;
    float& out = y[image * y_image + at];
    float v = out;
    if (epilogue_has_bias(epilogue)) v += bias[kChannelsLast ? at % channels : at / plane];
    out = gemm_activation(v, epilogue);
  }
}

}  // namespace detail

// The kernel epilogue of the project's convolution kernels, in place on the y that cuDNN wrote:
// dense, NCDHW or (channels_last) NDHWC, or (NCDHW) a window of whole channels of a cat's buffer,
// its images y_image floats apart (ConvShape::y_image; 0: dense). Nothing for
// MatmulEpilogue::none.
inline cudaError_t launch_conv_bias_activation(float* y, const float* bias, MatmulEpilogue epilogue,
                                               int64_t batch, int64_t channels, int64_t plane,
                                               int64_t y_image, bool channels_last,
                                               cudaStream_t stream) {
  if (epilogue == MatmulEpilogue::none) return cudaSuccess;
  if (y_image == 0) y_image = channels * plane;
  if (y_image < channels * plane || (channels_last && y_image != channels * plane))
    return cudaErrorInvalidValue;
  const int64_t count = batch * channels * plane;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((count + 255) / 256, 65536));
  if (channels_last)
    detail::conv_bias_activation_kernel<true>
        <<<blocks, 256, 0, stream>>>(y, bias, epilogue, channels, plane, y_image, count);
  else
    detail::conv_bias_activation_kernel<false>
        <<<blocks, 256, 0, stream>>>(y, bias, epilogue, channels, plane, y_image, count);
  return cudaGetLastError();
}

// The cuDNN side of a timed pair: the convolution, then the kernel epilogue's pass.
inline int run_cudnn_with_epilogue(const CudnnConv& conv, const ConvShape& shape,
                                   MatmulEpilogue epilogue, const float* x, const float* w,
                                   const float* bias, float* y, void* workspace,
                                   cudaStream_t stream, std::string& error) {
  STITCH_CHECK(conv.run(x, w, y, workspace, stream, error));
  int64_t plane = 1;
  for (int i = 0; i < shape.spatial; ++i)
    plane *= shape.output[i];
  STITCH_CHECK_CUDA(launch_conv_bias_activation(y, bias, epilogue, shape.batch, shape.out_channels,
                                                plane, shape.y_image, shape.y_channels_last,
                                                stream));
  return STITCH_OK;
}

// The floats the kernel's x spans: more than dense where it reads a window of a larger buffer
// (ConvIgemmTf32x3::input_floats), else `dense`.
template <class KernelConv, class = void>
struct KernelInputFloats {
  static int64_t of(const KernelConv&, int64_t dense) { return dense; }
};
template <class KernelConv>
struct KernelInputFloats<KernelConv,
                         std::void_t<decltype(std::declval<const KernelConv&>().input_floats())>> {
  static int64_t of(const KernelConv& kernel, int64_t dense) {
    return std::max(dense, kernel.input_floats());
  }
};

// The passes cuDNN's side of a timed pair makes besides the convolution and the kernel
// epilogue's: over x, giving cuDNN the input the kernel transforms as it reads (a prologue); over
// y, applying the output transform the kernel applies as it stores.
struct CudnnSidePasses {
  bool input = false, output = false;
};

// Times `kernel` (initialised with `epilogue`; `weights_prepared`: it runs with w = nullptr, as
// the program's forward does) against `cudnn` (initialised and tuned for `shape`) plus the
// epilogue's pass and the `passes` (each an identity transform here, as costly as the real one),
// on zeroed scratch x, w, bias and y allocated here and freed before returning, by
// time_alternatives (kernels/program_support.cuh). cudnn_faster: cuDNN's total was the smaller.
// Synchronises `stream`; for stitch_init only.
template <class KernelConv>
int time_kernel_against_cudnn(const KernelConv& kernel, bool weights_prepared,
                              const CudnnConv& cudnn, const ConvShape& shape,
                              MatmulEpilogue epilogue, CudnnSidePasses passes, void* workspace,
                              cudaStream_t stream, std::string& error, bool& cudnn_faster,
                              int iterations = 5) {
  int64_t x = 0, w = 0, y = 0;
  conv_elements(shape, x, w, y);
  InitScratch scratch(stream);
  const int sx = scratch.add(KernelInputFloats<KernelConv>::of(kernel, x)), sw = scratch.add(w);
  const int sy = scratch.add(conv_y_footprint(shape));
  const int bias = scratch.add(shape.out_channels);
  const int sx_pass = passes.input ? scratch.add(x) : sx;
  STITCH_CHECK(scratch.allocate(error));
  return time_alternatives(
      [&] {
        return kernel.run(scratch.at(sx), weights_prepared ? nullptr : scratch.at(sw),
                          scratch.at(bias), scratch.at(sy), stream, error);
      },
      [&] {
        if (passes.input)
          STITCH_CHECK_CUDA(detail::launch_transform_planes(
              scratch.at(sx), x / shape.batch, scratch.at(sx_pass), shape.batch, shape.in_channels,
              x / (shape.batch * shape.in_channels), stream));
        STITCH_CHECK(run_cudnn_with_epilogue(cudnn, shape, epilogue, scratch.at(sx_pass),
                                             scratch.at(sw), scratch.at(bias), scratch.at(sy),
                                             workspace, stream, error));
        if (passes.output)  // in place, y dense (a transformed y is a buffer of its own)
          STITCH_CHECK_CUDA(detail::launch_transform_planes(
              scratch.at(sy), y / shape.batch, scratch.at(sy), shape.batch, shape.out_channels,
              y / (shape.batch * shape.out_channels), stream));
        return STITCH_OK;
      },
      stream, error, cudnn_faster, iterations);
}

}  // namespace stitch::kernels
