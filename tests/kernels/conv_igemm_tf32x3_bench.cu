// Bench of kernels/conv_igemm_tf32x3.cuh (implicit-GEMM 3xTF32 convolution, FP32-accurate)
// against cuDNN's tuned engine in strict FP32 (what the fp32 track runs today) and in TF32 (the
// tf32 track; not FP32-accurate), on AlexNet / VGG16 / ResNet-50 / DenseNet layers at KernelBench
// level 3's batch sizes and on level-2 convolutions of 16-64 output channels. Not a test: built on
// demand (target conv_igemm_tf32x3_bench) and run on a GPU by hand; its "igemm eff" and "strict
// eff" columns are what the planner's estimate_conv_igemm (kConvIgemmPeakEfficiency scaled for
// pipeline fill and the gather) and kCudnnStrictConvEfficiency (src/plan/kernel_choice.h) should
// reproduce.
//
//   conv_igemm_tf32x3_bench [NAME_SUBSTRING]   only the layers whose name contains it
//
// Per layer: the wgmma igemm output compared with cuDNN strict FP32 (relative error norm), then
// each engine (ConvIgemmTf32x3 on its wgmma kernel — "cp.async": forced to the producer warpgroup's
// chunked cp.async gather where the automatic choice loads A by the im2col TMA
// (kernels/conv_igemm_im2col_tma.cuh; the row's description says which it took), NaN where it does
// not; "x copy" and "1x copy": three and one products forced to gather from a channels-last copy of
// x where the automatic choice reads the NCDHW x by TMA boxes (conv_igemm_box_tma.cuh), NaN where
// it does not; "wide": forced to the 128-wide tile where the automatic choice is the 64-wide one —
// and its mma.sync kernel, the weight split at init; cuDNN strict and TF32; "tf32x1":
// ConvIgemmTf32, one TF32 product, the tf32 track's kernel; "1x128": it forced to the 128-wide tile
// where its automatic choice is the 256-wide one) timed with CUDA events, L2 flushed before every
// run, the median of kIterations after warm-ups; "nhwc": the wgmma kernel on a layer inside an NHWC
// region (src/plan/layout.h: x arrives channels-last, no transpose, y written channels-last).
// "%floor": the 3xTF32 roofline floor — 3 x 2·M·N·K at the dense TF32 peak, or reading x and w and
// writing y at the DRAM bandwidth, the larger — over wgmma's time. "igemm eff": 3 x 2·M·N·K over
// wgmma's time, as a fraction of the TF32 peak (the planner's model of this kernel); "strict eff":
// 2·M·N·K over cuDNN strict's time, as a fraction of the FP32 peak; "1x eff" and "tf32 eff":
// 2·M·N·K over tf32x1's and cuDNN TF32's times, as fractions of the TF32 peak
// (kConvIgemmOneProductEfficiency's and kCudnnTf32ConvEfficiency's ground). Then level 2's
// transposed convolutions: ConvTransposeIgemmTf32x3 (kernels/conv_transpose.cuh, its phases on the
// wgmma kernel) and ConvTransposeDirect (its phases on the direct kernel, where each is within its
// K) against cuDNN strict and TF32, and their error norms against strict. Last, level 2's
// convolutions of few input channels (2-d and 3-d, as the tasks have them): the direct FP32 kernel
// (kernels/conv_direct.cuh) against the wgmma igemm (three products and, "tf32x1", one) and cuDNN
// strict and TF32, "direct eff" its FLOPs over its time as a fraction of the FP32 peak (the
// planner's model of it), "1x eff" the one-product kernel's of the TF32 peak (a short K's), and the
// direct kernel's error norm against strict; then ConvDirectTf32 ("dir tf32", its TF32 efficiency
// "dt eff", its norm) and the same at most two columns per lane ("dt c2": three blocks per SM where
// the default takes four columns and two).
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_support.cuh"
#include "kernels/conv.cuh"
#include "kernels/conv_direct.cuh"
#include "kernels/conv_igemm_tf32x3.cuh"
#include "kernels/conv_transpose.cuh"  // ConvTransposeIgemmTf32x3, ConvTransposeDirect

namespace {

using namespace stitch::kernels;

constexpr double kDramGbps = 4800.0;       // src/util/gpu_peaks.cc, H200
constexpr double kFp32PeakTflops = 67.0;   // ... FP32 without tensor cores
constexpr double kTf32PeakTflops = 494.7;  // ... dense TF32
constexpr int kIterations = 15, kWarmups = 3;
// cuDNN's workspace as the planner gives it (src/plan/kernel_choice.h): 256 MiB in strict FP32,
// up to 4 GiB (the operands' size) under TF32 math, whose NCHW engines transpose there.
constexpr size_t kStrictWorkspaceBytes = size_t{256} << 20;
constexpr size_t kTf32WorkspaceBytes = size_t{4} << 30;

// bench_support.cuh's median at this bench's warm-ups and iterations.
template <class Run>
double median_ms(Run run, void* flush) {
  return stitch::bench::median_ms(run, flush, kWarmups, kIterations);
}

struct Layer {
  const char* name;
  int64_t batch, in_channels, out_channels, size, kernel, stride, pad;  // square 2-d
};

ConvIgemmShape igemm_shape(const Layer& l) {
  ConvIgemmShape s;
  s.spatial = 2, s.batch = l.batch, s.in_channels = l.in_channels;
  s.out_channels = l.out_channels;
  for (int i = 0; i < 2; ++i) {
    s.input[i] = l.size, s.kernel[i] = l.kernel, s.stride[i] = l.stride;
    s.pad_before[i] = s.pad_after[i] = l.pad;
    s.output[i] = (l.size + 2 * l.pad - l.kernel) / l.stride + 1;
  }
  return s;
}

ConvShape cudnn_shape(const ConvIgemmShape& g) {
  ConvShape s;
  s.spatial = g.spatial, s.batch = g.batch, s.in_channels = g.in_channels;
  s.out_channels = g.out_channels;
  for (int i = 0; i < g.spatial; ++i) {
    s.input[i] = g.input[i], s.output[i] = g.output[i], s.kernel[i] = g.kernel[i];
    s.stride[i] = g.stride[i], s.pad_before[i] = g.pad_before[i], s.pad_after[i] = g.pad_after[i];
  }
  s.alignment = 16;
  return s;
}

float* device_random(size_t count, unsigned seed) {
  std::vector<float> host(count);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : host)
    v = dist(rng);
  float* data = nullptr;
  CHECK_CUDA(cudaMalloc(&data, count * sizeof(float)));
  CHECK_CUDA(cudaMemcpy(data, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  return data;
}

// ||got - want|| / ||want|| over two device arrays.
double relative_norm(const float* got, const float* want, size_t count) {
  std::vector<float> a(count), b(count);
  CHECK_CUDA(cudaMemcpy(a.data(), got, count * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(b.data(), want, count * sizeof(float), cudaMemcpyDeviceToHost));
  double diff = 0, norm = 0;
  for (size_t i = 0; i < count; ++i) {
    diff += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
    norm += double{b[i]} * b[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-300));
}

// One layer's device memory: random x and w, and an output for each side of the comparison.
struct Operands {
  Operands(size_t x_count, size_t w_count, size_t y_count)
      : x(device_random(x_count, 1)), w(device_random(w_count, 2)), y_count(y_count) {
    CHECK_CUDA(cudaMalloc(&y_igemm, y_count * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&y_cudnn, y_count * sizeof(float)));
  }
  ~Operands() {
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(y_igemm));
    CHECK_CUDA(cudaFree(y_cudnn));
  }
  Operands(const Operands&) = delete;
  Operands& operator=(const Operands&) = delete;

  float *x, *w, *y_igemm = nullptr, *y_cudnn = nullptr;
  size_t y_count;
};

// cuDNN on one layer, strict FP32 and TF32 each tuned (where cuDNN has no engine, the reason is
// printed and its figures are NaN): the igemm output's error norm against strict, and each
// engine's median time.
class CudnnSide {
 public:
  CudnnSide(const ConvShape& shape, const Operands& operands, CudnnHandle& cudnn, void* workspace,
            const char* name)
      : operands_(operands), workspace_(workspace), name_(name) {
    have_strict_ = ready(strict_, shape, ConvMath::strict_fp32, cudnn);
    have_tf32_ = ready(tf32_, shape, ConvMath::tf32, cudnn);
  }

  // Runs `run_igemm` (writing operands.y_igemm) and strict cuDNN once each, and compares.
  template <class RunIgemm>
  double error_norm(RunIgemm run_igemm) {
    if (!have_strict_) return NAN;
    run_igemm();
    run(strict_);
    CHECK_CUDA(cudaDeviceSynchronize());
    return relative_norm(operands_.y_igemm, operands_.y_cudnn, operands_.y_count);
  }

  double strict_ms(void* flush) {
    return have_strict_ ? median_ms([&] { run(strict_); }, flush) : NAN;
  }
  double tf32_ms(void* flush) {
    return have_tf32_ ? median_ms([&] { run(tf32_); }, flush) : NAN;
  }

 private:
  bool ready(CudnnConv& conv, const ConvShape& shape, ConvMath math, CudnnHandle& cudnn) {
    std::string error;
    const size_t limit = math == ConvMath::tf32 ? kTf32WorkspaceBytes : kStrictWorkspaceBytes;
    if (conv.init(cudnn.get(), shape, math, limit, error) != STITCH_OK ||
        tune_conv_on_scratch(conv, shape, workspace_, nullptr, error) != STITCH_OK) {
      std::printf("%-26s cuDNN %s: %s\n", name_, math == ConvMath::tf32 ? "tf32" : "strict",
                  error.c_str());
      return false;
    }
    return true;
  }

  void run(CudnnConv& conv) {
    std::string error;
    if (conv.run(operands_.x, operands_.w, operands_.y_cudnn, workspace_, nullptr, error) !=
        STITCH_OK) {
      std::printf("%s: cuDNN run: %s\n", name_, error.c_str());
      std::exit(1);
    }
  }

  const Operands& operands_;
  void* workspace_;
  const char* name_;
  CudnnConv strict_, tf32_;
  bool have_strict_ = false, have_tf32_ = false;
};

// The medians over the layers, printed last (the planner's model: the file comment).
struct Summary {
  std::vector<double> wgmma_efficiency, strict_efficiency, speedup_over_strict;
  std::vector<double> one_product_efficiency, cudnn_tf32_efficiency;  // the tf32 track's sides
};

double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// y [batch][positions][channels]: the output map of a layer whose output stays in an NHWC region.
ConvIgemmOutputMap nhwc_output_map(const ConvIgemmShape& s) {
  const detail::ConvIgemmDims d = detail::conv_igemm_dims(s);
  ConvIgemmOutputMap map;
  map.channel_floats = 1;
  map.step[2] = s.out_channels;
  map.step[1] = d.output[2] * map.step[2];
  map.step[0] = d.output[1] * map.step[1];
  map.image_floats = d.output[0] * map.step[0];
  return map;
}

void bench(const Layer& l, CudnnHandle& cudnn, void* workspace, void* flush, Summary& summary) {
  const ConvIgemmShape s = igemm_shape(l);
  const size_t xs = l.batch * l.in_channels * l.size * l.size;
  const size_t ws = l.out_channels * l.in_channels * l.kernel * l.kernel;
  const size_t ys = l.batch * l.out_channels * s.output[0] * s.output[1];
  const Operands o(xs, ws, ys);
  CudnnSide cudnn_side(cudnn_shape(s), o, cudnn, workspace, l.name);
  std::string error;
  auto ready = [&](auto& conv, Tf32x3Engine engine, int tile_n = 0, bool channels_last = false,
                   bool tma_im2col = true, bool box_tma = true) {
    conv.set_engine(engine);
    conv.set_tile_n(tile_n);
    conv.allow_tma_im2col(tma_im2col);
    conv.allow_box_tma(box_tma);
    if (channels_last) {  // a layer inside a plan's NHWC region (src/plan/layout.h)
      conv.set_input_channels_last(true);
      conv.set_output_map(nhwc_output_map(s));
    }
    if (conv.init(s, MatmulEpilogue::none, error) != STITCH_OK ||
        conv.prepare_weights(o.w, nullptr, error) != STITCH_OK) {
      std::printf("%-26s igemm: %s\n", l.name, error.c_str());
      return false;
    }
    return true;
  };
  ConvIgemmTf32x3 wgmma, chunked, wide, mma, nhwc, copied;
  const bool have_wgmma = ready(wgmma, Tf32x3Engine::wgmma);
  // The channels-last copy of x where the automatic choice reads x by boxes: what the boxes gain.
  const bool have_copied = have_wgmma && wgmma.uses_box_tma() &&
                           ready(copied, Tf32x3Engine::wgmma, 0, false, true, false);
  // The chunked cp.async gather where the automatic choice is the im2col TMA: what the TMA gains.
  const bool have_chunked =
      have_wgmma && wgmma.uses_tma_im2col() && ready(chunked, Tf32x3Engine::wgmma, 0, false, false);
  ConvIgemmTf32 one, one_128, one_copied;  // the tf32 track's one TF32 product, on wgmma
  const bool have_one = ready(one, Tf32x3Engine::wgmma);
  const bool have_one_copied = have_one && one.uses_box_tma() &&
                               ready(one_copied, Tf32x3Engine::wgmma, 0, false, true, false);
  // One product's 128-wide tile where its automatic choice is the 256-wide one: what that gains.
  const bool have_one_128 =
      have_one && one.tile_n() == 256 && ready(one_128, Tf32x3Engine::wgmma, 128);
  const bool have_nhwc = ready(nhwc, Tf32x3Engine::wgmma, 0, true);
  // The 128-wide tile where the automatic choice is the 64-wide one: what the narrow tile gains.
  const bool narrow = have_wgmma && wgmma.tile_n() < 128;
  const bool have_wide = narrow && ready(wide, Tf32x3Engine::wgmma, 128);
  const bool have_mma = ready(mma, Tf32x3Engine::mma_sync);
  auto run_igemm = [&](const auto& conv) {
    if (conv.run(o.x, nullptr, nullptr, o.y_igemm, nullptr, error) != STITCH_OK) {
      std::printf("%s: igemm run: %s\n", l.name, error.c_str());
      std::exit(1);
    }
  };
  const double norm = have_wgmma ? cudnn_side.error_norm([&] { run_igemm(wgmma); }) : NAN;
  const double wgmma_ms = have_wgmma ? median_ms([&] { run_igemm(wgmma); }, flush) : NAN;
  const double chunked_ms = have_chunked ? median_ms([&] { run_igemm(chunked); }, flush) : NAN;
  const double copied_ms = have_copied ? median_ms([&] { run_igemm(copied); }, flush) : NAN;
  const double one_copied_ms =
      have_one_copied ? median_ms([&] { run_igemm(one_copied); }, flush) : NAN;
  const double nhwc_ms = have_nhwc ? median_ms([&] { run_igemm(nhwc); }, flush) : NAN;
  const double wide_ms = have_wide ? median_ms([&] { run_igemm(wide); }, flush) : NAN;
  const double mma_ms = have_mma ? median_ms([&] { run_igemm(mma); }, flush) : NAN;
  const double one_ms = have_one ? median_ms([&] { run_igemm(one); }, flush) : NAN;
  const double one_128_ms = have_one_128 ? median_ms([&] { run_igemm(one_128); }, flush) : NAN;
  const double strict_ms = cudnn_side.strict_ms(flush);
  const double tf32_ms = cudnn_side.tf32_ms(flush);
  const double flops = 2.0 * static_cast<double>(ys) * l.in_channels * l.kernel * l.kernel;
  const double floor_ms = std::max(3.0 * flops / (kTf32PeakTflops * 1e9),
                                   4.0 * static_cast<double>(xs + ws + ys) / (kDramGbps * 1e6));
  const double efficiency = 3.0 * flops / (wgmma_ms * 1e9) / kTf32PeakTflops;
  const double strict_efficiency = flops / (strict_ms * 1e9) / kFp32PeakTflops;
  const double one_efficiency = flops / (one_ms * 1e9) / kTf32PeakTflops;
  const double tf32_efficiency = flops / (tf32_ms * 1e9) / kTf32PeakTflops;
  std::printf(
      "%-26s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f %6.1f%% %9.3f "
      "%10.3f %7.3f %8.3f %9.1e  %s | %s\n",
      l.name, wgmma_ms, chunked_ms, copied_ms, nhwc_ms, wide_ms, mma_ms, one_ms, one_copied_ms,
      one_128_ms, strict_ms,
      tf32_ms, 100.0 * floor_ms / wgmma_ms, efficiency, strict_efficiency, one_efficiency,
      tf32_efficiency, norm, wgmma.describe().c_str(), have_one ? one.describe().c_str() : "-");
  if (std::isfinite(one_efficiency)) summary.one_product_efficiency.push_back(one_efficiency);
  if (std::isfinite(tf32_efficiency)) summary.cudnn_tf32_efficiency.push_back(tf32_efficiency);
  if (std::isfinite(efficiency)) summary.wgmma_efficiency.push_back(efficiency);
  if (std::isfinite(strict_efficiency)) summary.strict_efficiency.push_back(strict_efficiency);
  if (std::isfinite(wgmma_ms) && std::isfinite(strict_ms))
    summary.speedup_over_strict.push_back(strict_ms / wgmma_ms);
}

// A transposed convolution (square, every spatial dim alike): ConvTransposeIgemmTf32x3 (its
// phases on the wgmma kernel) against cuDNN's strict FP32 and TF32 on the same shape.
struct TransposedLayer {
  const char* name;
  int spatial;
  int64_t batch, in_channels, out_channels, size, kernel, stride, pad, output_padding;
};

void bench_transposed(const TransposedLayer& l, CudnnHandle& cudnn, void* workspace, void* flush) {
  ConvTransposeShape s;
  ConvShape shape;
  s.spatial = shape.spatial = l.spatial;
  s.batch = shape.batch = l.batch;
  s.in_channels = shape.in_channels = l.in_channels;
  s.out_channels = shape.out_channels = l.out_channels;
  shape.transposed = true;
  shape.alignment = 16;
  size_t xs = l.batch * l.in_channels, ys = l.batch * l.out_channels;
  size_t ws = l.in_channels * l.out_channels;
  for (int i = 0; i < l.spatial; ++i) {
    s.input[i] = shape.input[i] = l.size;
    s.kernel[i] = shape.kernel[i] = l.kernel;
    s.stride[i] = shape.stride[i] = l.stride;
    s.pad[i] = shape.pad_before[i] = shape.pad_after[i] = l.pad;
    s.output[i] = shape.output[i] =
        (l.size - 1) * l.stride - 2 * l.pad + l.kernel + l.output_padding;
    xs *= l.size, ys *= s.output[i], ws *= l.kernel;
  }
  const Operands o(xs, ws, ys);
  CudnnSide cudnn_side(shape, o, cudnn, workspace, l.name);
  std::string error;
  ConvTransposeIgemmTf32x3 igemm;
  igemm.set_engine(Tf32x3Engine::wgmma);
  if (igemm.init(s, MatmulEpilogue::none, error) != STITCH_OK ||
      igemm.prepare_weights(o.w, nullptr, error) != STITCH_OK) {
    std::printf("%-26s transposed igemm: %s\n", l.name, error.c_str());
    std::exit(1);
  }
  auto run_igemm = [&] {
    if (igemm.run(o.x, nullptr, nullptr, o.y_igemm, nullptr, error) != STITCH_OK) {
      std::printf("%s: transposed igemm run: %s\n", l.name, error.c_str());
      std::exit(1);
    }
  };
  // The phases on the direct kernel too, where every phase is within its K.
  ConvTransposeDirect direct;
  const bool have_direct = direct.init(s, MatmulEpilogue::none, error) == STITCH_OK &&
                           direct.prepare_weights(o.w, nullptr, error) == STITCH_OK;
  auto run_direct = [&] {
    if (direct.run(o.x, nullptr, nullptr, o.y_igemm, nullptr, error) != STITCH_OK) {
      std::printf("%s: transposed direct run: %s\n", l.name, error.c_str());
      std::exit(1);
    }
  };
  const double direct_norm = have_direct ? cudnn_side.error_norm(run_direct) : NAN;
  const double direct_ms = have_direct ? median_ms(run_direct, flush) : NAN;
  const double norm = cudnn_side.error_norm(run_igemm);
  const double igemm_ms = median_ms(run_igemm, flush);
  const double strict_ms = cudnn_side.strict_ms(flush);
  const double tf32_ms = cudnn_side.tf32_ms(flush);
  std::printf("%-26s %8.3f %8.3f %8.3f %8.3f %8.2fx %9.1e %9.1e  %s\n", l.name, igemm_ms, direct_ms,
              strict_ms, tf32_ms, strict_ms / igemm_ms, norm, direct_norm,
              igemm.describe().c_str());
}

// A convolution of few input channels: ConvDirect against the wgmma igemm and cuDNN.
struct FewChannelLayer {
  const char* name;
  ConvIgemmShape shape;
};

void bench_direct(const FewChannelLayer& l, CudnnHandle& cudnn, void* workspace, void* flush) {
  const ConvIgemmShape& s = l.shape;
  size_t xs = s.batch * s.in_channels, ys = s.batch * s.out_channels;
  size_t ws = s.out_channels * s.in_channels / s.groups;
  for (int i = 0; i < s.spatial; ++i)
    xs *= s.input[i], ys *= s.output[i], ws *= s.kernel[i];
  const Operands o(xs, ws, ys);
  CudnnSide cudnn_side(cudnn_shape(s), o, cudnn, workspace, l.name);
  std::string error;
  ConvDirect direct;
  if (direct.init(s, MatmulEpilogue::none, error) != STITCH_OK) {
    std::printf("%-26s direct: %s\n", l.name, error.c_str());
    return;
  }
  // A run of `conv` (a ConvDirectOf), exiting on an error.
  auto direct_run = [&](const auto& conv) {
    return [&] {
      if (conv.run(o.x, o.w, nullptr, o.y_igemm, nullptr, error) != STITCH_OK) {
        std::printf("%s: %s run: %s\n", l.name, conv.describe().c_str(), error.c_str());
        std::exit(1);
      }
    };
  };
  const auto run_direct = direct_run(direct);
  ConvIgemmTf32x3 igemm;
  ConvIgemmTf32 one;  // the tf32 track's one product
  auto ready = [&](auto& conv) {
    conv.set_engine(Tf32x3Engine::wgmma);
    return conv.init(s, MatmulEpilogue::none, error) == STITCH_OK &&
           conv.prepare_weights(o.w, nullptr, error) == STITCH_OK;
  };
  const bool have_igemm = ready(igemm), have_one = ready(one);
  ConvDirectTf32 direct_tf32;  // the tf32 track's: one TF32 product on the tensor cores
  const bool have_direct_tf32 = direct_tf32.init(s, MatmulEpilogue::none, error) == STITCH_OK;
  const auto run_direct_tf32 = direct_run(direct_tf32);
  const double tf32_norm = have_direct_tf32 ? cudnn_side.error_norm(run_direct_tf32) : NAN;
  const double direct_tf32_ms = have_direct_tf32 ? median_ms(run_direct_tf32, flush) : NAN;
  // The same with at most two columns per lane (three blocks per SM on the tensor cores).
  ConvDirectTf32 narrow_tf32;
  narrow_tf32.set_max_cols_per_lane(2);
  const bool have_narrow = narrow_tf32.init(s, MatmulEpilogue::none, error) == STITCH_OK;
  const auto run_narrow = direct_run(narrow_tf32);
  const double narrow_norm = have_narrow ? cudnn_side.error_norm(run_narrow) : NAN;
  const double narrow_ms = have_narrow ? median_ms(run_narrow, flush) : NAN;
  const double norm = cudnn_side.error_norm(run_direct);
  const double direct_ms = median_ms(run_direct, flush);
  auto run_igemm = [&](const auto& conv) {
    if (conv.run(o.x, nullptr, nullptr, o.y_igemm, nullptr, error) != STITCH_OK) {
      std::printf("%s: igemm run: %s\n", l.name, error.c_str());
      std::exit(1);
    }
  };
  const double igemm_ms = have_igemm ? median_ms([&] { run_igemm(igemm); }, flush) : NAN;
  const double one_ms = have_one ? median_ms([&] { run_igemm(one); }, flush) : NAN;
  const double strict_ms = cudnn_side.strict_ms(flush);
  const double tf32_ms = cudnn_side.tf32_ms(flush);
  const double flops = 2.0 * static_cast<double>(ws) / s.out_channels * static_cast<double>(ys);
  std::printf(
      "%-26s %8.3f %8.3f %8.3f %8.3f %8.3f %8.2fx %10.3f %7.3f %9.1e %8.3f %7.3f %9.1e %8.3f "
      "%9.1e  %s | %s | %s | %s\n",
      l.name, direct_ms, igemm_ms, one_ms, strict_ms, tf32_ms, strict_ms / direct_ms,
      flops / (direct_ms * 1e9) / kFp32PeakTflops, flops / (one_ms * 1e9) / kTf32PeakTflops, norm,
      direct_tf32_ms, flops / (direct_tf32_ms * 1e9) / kTf32PeakTflops, tf32_norm, narrow_ms,
      narrow_norm, direct.describe().c_str(),
      have_direct_tf32 ? direct_tf32.describe().c_str() : "-",
      have_narrow ? narrow_tf32.describe().c_str() : "-", have_one ? one.describe().c_str() : "-");
}

}  // namespace

int main(int argc, char** argv) {
  const std::string only = argc > 1 ? argv[1] : "";
  const Layer layers[] = {
      // AlexNet (KernelBench level 3: batch 1024, 224 x 224).
      {"alexnet_conv1_k11_s4", 1024, 3, 96, 224, 11, 4, 2},
      {"alexnet_conv2_k5", 1024, 96, 256, 27, 5, 1, 2},
      {"alexnet_conv3_k3", 1024, 256, 384, 13, 3, 1, 1},
      {"alexnet_conv5_k3", 1024, 384, 256, 13, 3, 1, 1},
      // VGG16 (batch 10).
      {"vgg16_conv1_2_64x224", 10, 64, 64, 224, 3, 1, 1},
      {"vgg16_conv2_2_128x112", 10, 128, 128, 112, 3, 1, 1},
      {"vgg16_conv3_3_256x56", 10, 256, 256, 56, 3, 1, 1},
      {"vgg16_conv4_3_512x28", 10, 512, 512, 28, 3, 1, 1},
      {"vgg16_conv5_3_512x14", 10, 512, 512, 14, 3, 1, 1},
      // ResNet-50 (batch 10).
      {"resnet_stem_k7_s2", 10, 3, 64, 224, 7, 2, 3},
      {"resnet_1x1_256to64_56", 10, 256, 64, 56, 1, 1, 0},
      {"resnet_3x3_64_56", 10, 64, 64, 56, 3, 1, 1},
      {"resnet_1x1_64to256_56", 10, 64, 256, 56, 1, 1, 0},
      {"resnet_3x3_128_s2", 10, 128, 128, 56, 3, 2, 1},
      {"resnet_1x1_1024to256_14", 10, 1024, 256, 14, 1, 1, 0},
      {"resnet_3x3_512_7", 10, 512, 512, 7, 3, 1, 1},
      // DenseNet's 3x3 growth convolution (32 channels out) and KernelBench level-2 convolutions
      // of 16-128 output channels (no padding, as the tasks have them).
      {"densenet_3x3_128to32_56", 10, 128, 32, 56, 3, 1, 1},
      {"l2_3to16_k3_32", 128, 3, 16, 32, 3, 1, 0},
      {"l2_8to64_k3_128", 128, 8, 64, 128, 3, 1, 0},
      {"l2_16to64_k3_256", 128, 16, 64, 256, 3, 1, 0},
      {"l2_64to64_k3_256", 64, 64, 64, 256, 3, 1, 0},
      {"l2_64to128_k3_128", 128, 64, 128, 128, 3, 1, 0},
      {"l2_64to128_k3_256", 64, 64, 128, 256, 3, 1, 0},
  };
  CudnnHandle cudnn;
  std::string error;
  if (cudnn.create(error) != STITCH_OK) {
    std::printf("cuDNN: %s\n", error.c_str());
    return 1;
  }
  void *workspace = nullptr, *flush = nullptr;
  CHECK_CUDA(cudaMalloc(&workspace, kTf32WorkspaceBytes));
  CHECK_CUDA(cudaMalloc(&flush, stitch::bench::kFlushBytes));
  std::printf("%-26s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %8s %7s %9s %10s %7s %8s %9s\n",
              "layer", "wgmma ms", "cp.async", "x copy", "nhwc", "wide", "mma", "tf32x1",
              "1x copy", "1x128", "strict", "tf32", "%floor", "igemm eff", "strict eff", "1x eff",
              "tf32 eff", "rel_norm");
  Summary summary;
  for (const Layer& l : layers)
    if (only.empty() || std::string(l.name).find(only) != std::string::npos)
      bench(l, cudnn, workspace, flush, summary);
  std::printf("medians: wgmma igemm eff %.3f, cuDNN strict eff %.3f, wgmma over strict %.2fx\n",
              median(summary.wgmma_efficiency), median(summary.strict_efficiency),
              median(summary.speedup_over_strict));
  std::printf("medians (tf32 track): one-product igemm eff %.3f, cuDNN TF32 eff %.3f\n",
              median(summary.one_product_efficiency), median(summary.cudnn_tf32_efficiency));
  // KernelBench level 2's transposed convolutions.
  const TransposedLayer transposed[] = {
      {"t2d_64_k3_s1_256", 2, 128, 64, 64, 256, 3, 1, 1, 0},
      {"t2d_64_k3_s2_op1_128", 2, 128, 64, 64, 128, 3, 2, 1, 1},
      {"t3d_32to64_k3_s2_op1_32", 3, 32, 32, 64, 32, 3, 2, 1, 1},
      {"t3d_64to128_k3_s2_24", 3, 16, 64, 128, 24, 3, 2, 1, 0},
      {"t3d_3to16_k3_s2_op1_16", 3, 128, 3, 16, 16, 3, 2, 1, 1},
  };
  std::printf("%-26s %8s %8s %8s %8s %9s %9s %9s\n", "transposed layer", "igemm ms", "direct",
              "strict", "tf32", "vs strict", "rel_norm", "direct_n");
  for (const TransposedLayer& l : transposed)
    if (only.empty() || std::string(l.name).find(only) != std::string::npos)
      bench_transposed(l, cudnn, workspace, flush);
  // KernelBench level 2's convolutions of 3 to 16 input channels (full size, no padding).
  auto few = [](int64_t batch, int64_t cin, int64_t cout, std::vector<int64_t> input,
                int64_t kernel) {
    ConvIgemmShape s;
    s.spatial = static_cast<int>(input.size());
    s.batch = batch, s.in_channels = cin, s.out_channels = cout;
    for (int i = 0; i < s.spatial; ++i) {
      s.input[i] = input[i], s.kernel[i] = kernel;
      s.output[i] = input[i] - kernel + 1;
    }
    return s;
  };
  const FewChannelLayer few_channel[] = {
      {"f2d_3to16_k3_32", few(128, 3, 16, {32, 32}, 3)},
      {"f2d_8to64_k3_128", few(128, 8, 64, {128, 128}, 3)},
      {"f2d_8to64_k3_256", few(128, 8, 64, {256, 256}, 3)},
      {"f2d_16to64_k3_256", few(128, 16, 64, {256, 256}, 3)},
      {"f3d_3to16_k3_16x64x64", few(128, 3, 16, {16, 64, 64}, 3)},
      {"f3d_3to24_k3_24x32x32", few(128, 3, 24, {24, 32, 32}, 3)},
      {"f3d_3to16_k4_16x32x32", few(1024, 3, 16, {16, 32, 32}, 4)},
      {"f3d_8to16_k3_16x64x64", few(128, 8, 16, {16, 64, 64}, 3)},
      {"f3d_8to32_k3_32x64x64", few(64, 8, 32, {32, 64, 64}, 3)},
  };
  std::printf("%-26s %8s %8s %8s %8s %8s %9s %10s %7s %9s %8s %7s %9s %8s %9s\n",
              "few-channel layer", "direct", "igemm", "tf32x1", "strict", "tf32", "vs strict",
              "direct eff", "1x eff", "rel_norm", "dir tf32", "dt eff", "dt_norm", "dt c2",
              "c2_norm");
  for (const FewChannelLayer& l : few_channel)
    if (only.empty() || std::string(l.name).find(only) != std::string::npos)
      bench_direct(l, cudnn, workspace, flush);
  return 0;
}
