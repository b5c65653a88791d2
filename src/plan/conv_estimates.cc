// The convolution engines' time models and the engine call between them (kernel_choice.h):
// cuDNN, the depthwise, implicit-GEMM and direct kernels. The efficiencies are the H200's as the
// benches measured them (the constants' comments say where).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "plan/access.h"
#include "plan/kernel_choice.h"

namespace stitch::plan {

namespace {

// The product of a shape's sizes, as a double (spatial volumes of a convolution).
double product(const std::vector<int64_t>& sizes) {
  double result = 1;
  for (int64_t size : sizes)
    result *= static_cast<double>(size);
  return result;
}

// The implicit GEMM's K tiles per block: all of K, or where the tiles are fewer than the SMs a
// split of it (more, shorter blocks in one wave, each at least 8 K tiles).
double k_tiles_per_block(double tiles, double sms, double k_tiles) {
  if (tiles >= sms) return k_tiles;
  const double splits =
      std::max(1.0, std::min(std::floor(sms / tiles), std::floor(k_tiles / 8.0)));
  return std::ceil(k_tiles / splits);
}

}  // namespace

bool depthwise_conv_eligible(const ConvSpec& spec) {
  return !spec.transposed && (spec.input.size() == 1 || spec.input.size() == 2) &&
         spec.groups == spec.in_channels && spec.groups > 1 &&
         spec.out_channels % spec.in_channels == 0 && spec.x.is_contiguous() &&
         spec.w.is_contiguous();
}

DepthwiseEstimate estimate_depthwise_conv(const ConvSpec& spec, const GpuPeaks& peaks) {
  DepthwiseEstimate estimate;
  estimate.eligible = depthwise_conv_eligible(spec);
  if (!estimate.eligible || peaks.dram_gbps <= 0 || peaks.fp32_tflops <= 0) return estimate;
  const double outputs = static_cast<double>(spec.batch * spec.out_channels) * product(spec.output);
  const double inputs = static_cast<double>(spec.batch * spec.in_channels) * product(spec.input);
  const double weights = static_cast<double>(spec.out_channels) * product(spec.kernel);
  const double bytes = 4.0 * (inputs + outputs + weights);
  const double flops = 2.0 * outputs * product(spec.kernel);
  auto seconds = [&](double fixed, double memory, double compute) {
    return fixed + std::max(bytes / (peaks.dram_gbps * 1e9 * memory),
                            flops / (peaks.fp32_tflops * 1e12 * compute));
  };
  const bool one_d = spec.input.size() == 1;
  estimate.kernel_s =
      seconds(kDepthwiseKernelFixedSeconds,
              one_d ? kDepthwiseKernelMemory1d : kDepthwiseKernelMemory, kDepthwiseKernelCompute);
  estimate.cudnn_s =
      seconds(kCudnnDepthwiseFixedSeconds, one_d ? kCudnnDepthwiseMemory1d : kCudnnDepthwiseMemory,
              kCudnnDepthwiseCompute);
  estimate.prefer_kernel = estimate.kernel_s < estimate.cudnn_s;
  return estimate;
}

// kernels/conv_igemm_tf32x3.cuh indexes one image and the GEMM's M and K in int32.
constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

bool conv_igemm_eligible(const ConvSpec& spec) {
  const size_t spatial = spec.input.size();
  // A transposed convolution runs as its output phases' forward convolutions
  // (kernels/conv_transpose.cuh), with PyTorch's symmetric padding.
  if ((spec.transposed && spec.pad_before != spec.pad_after) || spatial < 1 || spatial > 3 ||
      spec.groups < 1 || spec.groups > kConvIgemmMaxGroups || spec.in_channels % spec.groups != 0 ||
      (spec.groups > 1 && spec.in_channels == spec.groups) ||
      !(spec.x.is_contiguous() || (!spec.transposed && is_channels_last(spec.x)) ||
        (!spec.transposed && spec.prologue && is_dense_per_image(spec.x))) ||
      !spec.w.is_contiguous())
    return false;
  int64_t in_plane = 1, out_plane = 1, volume = 1;
  for (size_t i = 0; i < spatial; ++i) {
    in_plane *= spec.input[i];
    out_plane *= spec.output[i];
    volume *= spec.kernel[i];
  }
  return spec.in_channels * in_plane <= kInt32Max && spec.out_channels * out_plane <= kInt32Max &&
         spec.batch * out_plane <= kInt32Max &&
         spec.in_channels / spec.groups * volume <= kInt32Max;
}

int64_t conv_igemm_gather_channels(int64_t in_channels, int64_t groups, int64_t kernel_volume) {
  if (groups <= 0) return 0;
  const int64_t channels = in_channels / groups;
  if (channels % 4 == 0) return channels;
  const int64_t padded = (channels + 3) / 4 * 4;
  return groups == 1 && 3 * padded <= 4 * channels && padded * kernel_volume <= kInt32Max ? padded
                                                                                          : 0;
}

int64_t conv_igemm_box_tiles(const ConvSpec& spec) {
  const size_t spatial = spec.input.size();
  if (spec.transposed || spec.groups != 1 || spec.prologue || !spec.x.is_contiguous() ||
      spatial < 1 || spatial > 3 || spec.input[spatial - 1] % 4 != 0 ||
      std::any_of(spec.stride.begin(), spec.stride.end(), [](int64_t s) { return s != 1; }))
    return 0;
  const int64_t padded = (spec.in_channels + 31) / 32 * 32;
  if (3 * padded > 4 * spec.in_channels ||
      padded * static_cast<int64_t>(product(spec.kernel)) > kInt32Max)
    return 0;
  const int64_t out_w = spec.output[spatial - 1];
  const int64_t out_h = spatial >= 2 ? spec.output[spatial - 2] : 1;
  int64_t best = -1;  // the positions the boxes cover
  for (int64_t w = kConvIgemmTile; w >= 8; w /= 2) {
    const int64_t h = kConvIgemmTile / w;
    if (h > 1 && out_h == 1) break;
    const int64_t positions = (out_w + w - 1) / w * w * ((out_h + h - 1) / h * h);
    if (best < 0 || positions < best) best = positions;
  }
  if (8 * best > 9 * out_h * out_w) return 0;  // more than an eighth past the output: the copy
  const int64_t depth = spatial == 3 ? spec.output[0] : 1;
  return spec.batch * depth * best / kConvIgemmTile;
}

bool conv_igemm_wide_tile(const ConvSpec& spec, int sms) {
  const int64_t n = spec.out_channels / std::max<int64_t>(spec.groups, 1);
  if (spec.transposed || n <= kConvIgemmTile ||
      (n + kConvIgemmWideTile - 1) / kConvIgemmWideTile !=
          (n + kConvIgemmTile - 1) / kConvIgemmWideTile)
    return false;
  const auto m = static_cast<int64_t>(static_cast<double>(spec.batch) * product(spec.output));
  const int64_t box_tiles = conv_igemm_box_tiles(spec);  // the kernel's M tiles, boxes or rows
  const int64_t m_tiles = box_tiles > 0 ? box_tiles : (m + kConvIgemmTile - 1) / kConvIgemmTile;
  const int64_t tiles = spec.groups * m_tiles * ((n + kConvIgemmWideTile - 1) / kConvIgemmWideTile);
  const int64_t k = spec.in_channels / std::max<int64_t>(spec.groups, 1) *
                    static_cast<int64_t>(product(spec.kernel));
  return tiles >= sms || (k + 31) / 32 < 16;  // no split: a full wave, or K too short to split
}

ConvIgemmEstimate estimate_conv_igemm(const ConvSpec& spec, const GpuPeaks& peaks,
                                      TensorMath math) {
  ConvIgemmEstimate estimate;
  estimate.eligible = conv_igemm_eligible(spec);
  if (!estimate.eligible || peaks.dram_gbps <= 0 || peaks.fp32_tflops <= 0) return estimate;
  const double tile_m = static_cast<double>(kConvIgemmTile);
  const double m = static_cast<double>(spec.batch) * product(spec.output);
  const double n = static_cast<double>(spec.out_channels / spec.groups);
  const bool narrow = n <= kConvIgemmNarrowTile;
  const bool one_product = math != TensorMath::fp32;
  const bool wide = one_product && conv_igemm_wide_tile(spec, peaks.sms);
  const double tile_n = static_cast<double>(narrow ? kConvIgemmNarrowTile
                                            : wide ? kConvIgemmWideTile
                                                   : kConvIgemmTile);
  const int64_t channels = spec.in_channels / spec.groups;
  const auto kernel_volume = static_cast<int64_t>(product(spec.kernel));
  // A transposed convolution's output takes 1 / stride of the kernel's taps per dimension.
  const double k = static_cast<double>(channels) * product(spec.kernel) /
                   (spec.transposed ? product(spec.stride) : 1.0);
  const double groups = static_cast<double>(spec.groups);
  const double flops = 2.0 * groups * m * n * k;
  const double input_bytes =
      4.0 * static_cast<double>(spec.batch * spec.in_channels) * product(spec.input);
  const double bytes =
      input_bytes + 4.0 * (static_cast<double>(spec.out_channels) * k + groups * m * n);
  const double bandwidth = peaks.dram_gbps * 1e9;
  const bool unit_stride = std::all_of(spec.stride.begin(), spec.stride.end(),
                                       [](int64_t stride) { return stride == 1; });
  const double cudnn_efficiency = !spec.transposed ? kCudnnStrictConvEfficiency
                                  : unit_stride    ? kCudnnStrictUnitStrideTransposedConvEfficiency
                                                   : kCudnnStrictTransposedConvEfficiency;
  // A prologue (the kernel's input transform, fusion rule F10): cuDNN reads the transformed copy
  // that one pass over x makes.
  const double input_pass_s = 2.0 * input_bytes / bandwidth + kLaunchSeconds;
  // One TF32 product (the tf32 and bf16 tracks): cuDNN's TF32 engines, on the TF32 peak.
  if (one_product && peaks.tf32_tflops <= 0) return estimate;
  const double cudnn_flops_per_s =
      one_product ? peaks.tf32_tflops * 1e12 * kCudnnTf32ConvEfficiency
                  : peaks.fp32_tflops * 1e12 * cudnn_efficiency;
  estimate.cudnn_s = std::max(flops / cudnn_flops_per_s, bytes / bandwidth) + kLaunchSeconds +
                     (spec.prologue ? input_pass_s : 0.0);
  if (peaks.tf32_tflops <= 0) return estimate;  // no tensor cores: nothing to run it on
  const double sms = peaks.sms > 0 ? peaks.sms : 1;
  // TMA boxes of x as it arrives, or the chunked gather (padded channels count in K: zero
  // columns are products too).
  const auto box_tiles = static_cast<double>(conv_igemm_box_tiles(spec));
  const bool boxes = box_tiles > 0;
  const double tiles =
      (boxes ? box_tiles : groups * std::ceil(m / tile_m)) * std::ceil(n / tile_n);
  const int64_t gather_channels =
      boxes ? (channels + 31) / 32 * 32
            : conv_igemm_gather_channels(spec.in_channels, spec.groups, kernel_volume);
  const bool chunked = gather_channels != 0, padded = chunked && gather_channels != channels;
  const double kernel_k = padded ? k * static_cast<double>(gather_channels) / channels : k;
  const double waves = std::ceil(tiles / sms);
  const double k_tiles = k_tiles_per_block(tiles, sms, std::ceil(kernel_k / 32.0));
  const double efficiency = kConvIgemmPeakEfficiency * k_tiles / (k_tiles + kConvIgemmFillTiles) *
                            (chunked ? 1.0 : kConvIgemmScalarGatherEfficiency) *
                            (narrow ? kConvIgemmNarrowEfficiency : 1.0) *
                            (one_product ? kConvIgemmOneProductEfficiency : 1.0) *
                            (wide ? kConvIgemmWideTileGain : 1.0);
  const double products = one_product ? 1.0 : 3.0;
  const double k_tile_s =
      products * 2.0 * tile_m * tile_n * 32.0 / (peaks.tf32_tflops * 1e12 / sms);
  // The kernel copies x per run where the gather's layout (channels-last when chunked) is not
  // the one x arrives in (a transpose), to pad its channels, or to apply a prologue (the
  // transpose does that too); never where it reads boxes of x. Eligible: channels-last where not
  // contiguous, or a window read by the prologue's copy.
  const bool x_channels_last = !spec.x.is_contiguous() && !spec.prologue;
  const bool copies =
      !boxes && (chunked != x_channels_last || padded || spec.prologue.has_value());
  // The copy with padding channels writes more than it reads.
  const double copy_s =
      padded ? (1.0 + static_cast<double>(gather_channels) / channels) * input_bytes / bandwidth +
                   kLaunchSeconds
             : input_pass_s;
  estimate.kernel_s = std::max(waves * k_tiles * k_tile_s / efficiency, bytes / bandwidth) +
                      (copies ? copy_s : 0.0) + kLaunchSeconds;
  estimate.prefer_kernel = estimate.kernel_s <= kTf32x3Margin * estimate.cudnn_s;
  return estimate;
}

namespace {

// plan_direct_conv's search (kernels/conv_direct.cuh) for a forward convolution in the 3-d view
// (index 0 depth, 1 height, 2 width): from the widest columns per lane and the most channel
// slices down, whether a tiling's weights and input patch fit the shared memory. On the tensor
// cores (`tf32`) a slice is 16 channels, K is padded to a multiple of 8 with its offset table
// beside the weights, and a patch row's pitch is 16 words past a multiple of 32. With a channel
// reduction (`reduce`) every output channel in one block (at most 8 slices, never fewer) and the
// warps' partials beside the patch.
bool direct_tiling_fits(int64_t cin, int64_t cout, const std::array<int64_t, 3>& kernel,
                        const std::array<int64_t, 3>& stride,
                        const std::array<int64_t, 3>& dilation, int64_t out_rows, int64_t out_cols,
                        bool tf32, bool reduce = false) {
  constexpr int64_t kWarps = 8;
  const int64_t slice_channels = tf32 ? 16 : 8;
  const int64_t k = cin * kernel[0] * kernel[1] * kernel[2];
  if (k > kDirectConvMaxK) return false;
  const int64_t weight_rows = tf32 ? (k + 7) / 8 * 8 : k, table = tf32 ? weight_rows : 0;
  int64_t slices = 1;
  while (slices < kWarps && slices * slice_channels < cout)
    slices *= 2;
  if (reduce && slices * slice_channels < cout) return false;
  for (int64_t lane_cols = out_cols <= 32   ? 1
                           : out_cols <= 64 ? 2
                                            : 4;
       lane_cols >= 1; lane_cols /= 2)
    for (int64_t s = slices; s >= (reduce ? slices : 1); s /= 2) {
      int64_t rows = kWarps / s, col_groups = 1;
      while (rows > 1 && rows / 2 >= out_rows && col_groups * 32 * lane_cols < out_cols)
        rows /= 2, col_groups *= 2;
      const int64_t patch_rows = (rows - 1) * stride[1] + (kernel[1] - 1) * dilation[1] + 1;
      int64_t patch_cols =
          (col_groups * 32 * lane_cols - 1) * stride[2] + (kernel[2] - 1) * dilation[2] + 1;
      if (tf32) patch_cols += (16 - patch_cols % 32 + 32) % 32;
      const int64_t partials = reduce ? s * rows * col_groups * 32 * lane_cols : 0;
      if (4 * (weight_rows * slice_channels * s + table +
               cin * kernel[0] * patch_rows * patch_cols + partials) <=
          kDirectConvSharedBytes)
        return true;
    }
  return false;
}

// Whether the direct kernel takes `spec` with a tiling of FP32 FMAs, or of the tensor cores
// (`tf32`), in its shared memory (with a channel reduction: `reduce`).
bool direct_conv_fits(const ConvSpec& spec, bool tf32, bool reduce = false) {
  // The kernel takes the implicit GEMM's shapes (ConvIgemmShape and its checks); a transposed
  // convolution runs as its phases' forward ones (kernels/conv_transpose.cuh), here with
  // dilation 1 only.
  if (!conv_igemm_eligible(spec) || !spec.x.is_contiguous() || spec.out_channels % spec.groups != 0)
    return false;
  const size_t spatial = spec.input.size();
  // The 3-d view of a per-dimension list (unit sizes in front of 1-d and 2-d).
  auto view = [&](const std::vector<int64_t>& v) {
    std::array<int64_t, 3> out = {1, 1, 1};
    for (size_t i = 0; i < spatial; ++i)
      out[3 - spatial + i] = v[i];
    return out;
  };
  const int64_t cin = spec.in_channels / spec.groups, cout = spec.out_channels / spec.groups;
  std::array<int64_t, 3> kernel = view(spec.kernel), stride = view(spec.stride);
  std::array<int64_t, 3> dilation = view(spec.dilation), output = view(spec.output);
  if (spec.transposed) {
    // A phase's forward convolution: stride 1 over x, at most ceil(kernel / stride) taps and
    // ceil(output / stride) outputs per dimension.
    if (dilation != std::array<int64_t, 3>{1, 1, 1}) return false;
    for (int i = 0; i < 3; ++i) {
      kernel[i] = (kernel[i] + stride[i] - 1) / stride[i];
      output[i] = (output[i] + stride[i] - 1) / stride[i];
      stride[i] = 1;
    }
  }
  return direct_tiling_fits(cin, cout, kernel, stride, dilation, output[1], output[2], tf32,
                            reduce);
}

}  // namespace

bool conv_igemm_reduces_channels(const ConvSpec& spec) {
  return spec.groups == 1 && !spec.transposed &&
         spec.out_channels <= kConvIgemmMaxReducedChannels && conv_igemm_eligible(spec);
}

bool direct_conv_one_product(const ConvSpec& spec, TensorMath math) {
  return math != TensorMath::fp32 && direct_conv_fits(spec, true);
}

bool direct_conv_eligible(const ConvSpec& spec, TensorMath math) {
  // ConvDirectTf32 runs FP32 FMAs where its own tiling does not fit.
  return direct_conv_fits(spec, false) || direct_conv_one_product(spec, math);
}

bool direct_conv_reduces_channels(const ConvSpec& spec, TensorMath math) {
  if (spec.groups != 1 || spec.transposed) return false;
  return direct_conv_fits(spec, false, true) ||
         (math != TensorMath::fp32 && direct_conv_fits(spec, true, true));
}

DirectConvEstimate estimate_direct_conv(const ConvSpec& spec, const GpuPeaks& peaks,
                                        TensorMath math) {
  DirectConvEstimate estimate;
  estimate.eligible = direct_conv_eligible(spec, math);
  if (!estimate.eligible || peaks.dram_gbps <= 0 || peaks.fp32_tflops <= 0) return estimate;
  const double outputs = static_cast<double>(spec.batch * spec.out_channels) * product(spec.output);
  // A transposed convolution's output takes 1 / stride of the kernel's taps per dimension.
  const double k = static_cast<double>(spec.in_channels / spec.groups) * product(spec.kernel) /
                   (spec.transposed ? product(spec.stride) : 1.0);
  const double flops = 2.0 * outputs * k;
  const double bytes =
      4.0 * (static_cast<double>(spec.batch * spec.in_channels) * product(spec.input) + outputs +
             static_cast<double>(spec.out_channels) * k);
  const double bandwidth = peaks.dram_gbps * 1e9;
  // Under TF32 math cuDNN's alternative runs its TF32 engines, the kernel its tensor-core form
  // where that fits (else FP32 FMAs).
  const bool tf32_math = math != TensorMath::fp32 && peaks.tf32_tflops > 0;
  const bool one_product = tf32_math && direct_conv_one_product(spec, math);
  const double kernel_flops_per_s = one_product
                                        ? peaks.tf32_tflops * 1e12 * kDirectConvTf32Efficiency
                                        : peaks.fp32_tflops * 1e12 * kDirectConvEfficiency;
  const double cudnn_flops_per_s = tf32_math
                                       ? peaks.tf32_tflops * 1e12 * kCudnnTf32ConvEfficiency
                                       : peaks.fp32_tflops * 1e12 * kCudnnStrictConvEfficiency;
  estimate.kernel_s = std::max(flops / kernel_flops_per_s, bytes / bandwidth) + kLaunchSeconds;
  estimate.cudnn_s = std::max(flops / cudnn_flops_per_s, bytes / bandwidth) + kLaunchSeconds;
  return estimate;
}

bool cudnn_grid_underfilled(const ConvSpec& spec, const GpuPeaks& peaks) {
  const int64_t positions = spec.batch * static_cast<int64_t>(product(spec.output));
  const int64_t channels = spec.out_channels / std::max<int64_t>(spec.groups, 1);
  const int64_t tiles = spec.groups * ((positions + kCudnnGridTileM - 1) / kCudnnGridTileM) *
                        ((channels + kCudnnGridTileN - 1) / kCudnnGridTileN);
  return peaks.sms > 0 && tiles < peaks.sms;
}

ConvEngineCall conv_engine_call(const ConvSpec& spec, const GpuPeaks& peaks, TensorMath math) {
  ConvEngineCall call;
  // No TF32 peak: no tensor cores, or --strict-fp32-gemm, which keeps the automatic choice on
  // cuDNN.
  if (peaks.tf32_tflops <= 0) return call;
  const ConvIgemmEstimate igemm = estimate_conv_igemm(spec, peaks, math);
  const DirectConvEstimate direct = estimate_direct_conv(spec, peaks, math);
  call.cudnn_s = igemm.cudnn_s;  // the cuDNN model per direction (direct's has no transposed one)
  // cuDNN runs whatever the kernels run, a channels-last x (layout.h) where it is given one
  // (cudnn_takes_channels_last; with a prologue it reads the kernel's dense transformed copy); a
  // convolution it runs in a few microseconds is not worth timing, unless its model has no ground
  // (an under-filled grid: a wider band too).
  const bool underfilled = cudnn_grid_underfilled(spec, peaks);
  double band = underfilled ? kUnderfilledTimedRatio : kTimedEngineRatio;
  if (math != TensorMath::fp32) band = std::max(band, kTf32TimedEngineRatio);
  const bool timeable =
      (spec.x.is_contiguous() || spec.prologue ||
       (cudnn_takes_channels_last(math) && is_channels_last(spec.x))) &&
      call.cudnn_s >= (underfilled ? kUnderfilledMinSeconds : kTimedEngineMinSeconds);
  auto take = [&](const char* kernel, double kernel_s, bool timed) {
    call.kernel = kernel, call.kernel_s = kernel_s, call.timed = timed;
    return call;
  };
  // On the tensor cores (one TF32 product) the direct kernel goes first where it is rated faster
  // than the implicit GEMM: few products per output, whose K tiles the GEMM leaves mostly empty.
  const bool direct_first =
      math != TensorMath::fp32 && !spec.prologue && direct.eligible &&
      !(igemm.eligible && igemm.kernel_s > 0 && igemm.kernel_s <= direct.kernel_s);
  if (direct_first && timeable && direct.kernel_s <= band * call.cudnn_s)
    return take("direct_conv", direct.kernel_s, true);
  if (igemm.eligible && igemm.kernel_s > 0) {  // TF32 tensor cores there
    const double ratio = igemm.kernel_s / call.cudnn_s;
    const double confident =
        math == TensorMath::fp32 ? kConfidentKernelRatio : kTf32ConfidentKernelRatio;
    if (ratio <= confident) return take("igemm_tf32x3_conv", igemm.kernel_s, false);
    if (timeable && ratio <= band) return take("igemm_tf32x3_conv", igemm.kernel_s, true);
  }
  // The direct kernel where the implicit GEMM is rated slower than cuDNN: few products per output.
  // It applies no prologue (conv_takes_prologue gives one only where the implicit GEMM is picked).
  if (!spec.prologue && direct.eligible && timeable && direct.kernel_s <= band * call.cudnn_s)
    return take("direct_conv", direct.kernel_s, true);
  return call;
}

}  // namespace stitch::plan
