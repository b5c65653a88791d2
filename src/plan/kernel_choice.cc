// Kernel choice and starting tunables (kernel_choice.h). The thresholds are starting points for
// the autotuner, not tuned results: a block per output needs enough work per block (>= 1024
// elements) and enough blocks (>= 2 per SM) to fill the GPU.
#include "plan/kernel_choice.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <iterator>
#include <numeric>

#include <fmt/format.h>

#include "plan/subtasks.h"

namespace stitch::plan {

namespace {

// Four consecutive elements of the innermost dim are one aligned 16-byte load (unit stride) or one
// broadcast value (stride 0).
bool vectorizable(const Access& access) {
  if (access.shape.empty() || access.shape.back() % 4 != 0) return false;
  if (access.strides.back() == 0) return true;
  if (access.strides.back() != 1 || access.offset % 4 != 0) return false;
  for (size_t d = 0; d + 1 < access.strides.size(); ++d)
    if (access.strides[d] % 4 != 0 && access.shape[d] != 1) return false;
  return true;
}

bool all_vectorizable(const std::vector<Access>& accesses) {
  return std::all_of(accesses.begin(), accesses.end(), vectorizable);
}

// Unit stride on m (for A) or k (for B) means cuBLASLt reads the operand with op T.
bool column_major(const Access& matrix) {
  return matrix.shape[2] != 1 && matrix.strides[2] != 1;
}

void choose_reduction(Subtask& subtask, const ReductionSpec& spec) {
  subtask.kernel = "reduce";
  const ReduceLaunch launch = plan_reduce_launch(spec.outer, spec.reduce, spec.inner);
  auto& tunables = subtask.tunables;
  tunables["reduce_strategy"] = static_cast<int64_t>(launch.strategy);
  tunables["block_x"] = launch.block_x;
  if (launch.strategy == ReduceStrategy::columns) tunables["block_y"] = launch.block_y;
  if (launch.splits > 1) {
    tunables["splits"] = launch.splits;
    tunables["workspace_bytes"] = launch.workspace_bytes;
  }
  // Four consecutive elements of a row: every prologue load must allow it too.
  const bool vector = spec.inner == 1 && spec.reduce % 4 == 0 && vectorizable(spec.input) &&
                      (!spec.prologue || all_vectorizable(spec.prologue->loads));
  tunables["vector_width"] = vector ? 4 : 1;
}

// The engine the override (STITCH_CONV_ENGINE) forces where its kernel can run the convolution,
// on any track (the direct kernel is exact FP32, the implicit GEMM FP32-accurate); its estimates
// kept as the choice's reason. False: cuDNN (forced, or the kernel cannot run it).
bool choose_forced_conv_kernel(Subtask& subtask, const ConvSpec& spec, const GpuPeaks& peaks,
                               ConvEngine engine) {
  double kernel_s = 0, cudnn_s = 0;
  if (engine == ConvEngine::igemm_tf32x3 && conv_igemm_eligible(spec)) {
    const ConvIgemmEstimate estimate = estimate_conv_igemm(spec, peaks);
    subtask.kernel = "igemm_tf32x3_conv";
    kernel_s = estimate.kernel_s, cudnn_s = estimate.cudnn_s;
  } else if (engine == ConvEngine::direct && direct_conv_eligible(spec)) {
    const DirectConvEstimate estimate = estimate_direct_conv(spec, peaks);
    subtask.kernel = "direct_conv";
    kernel_s = estimate.kernel_s, cudnn_s = estimate.cudnn_s;
  } else {
    return false;
  }
  subtask.tunables["estimate_us"] = std::llround(kernel_s * 1e6);
  subtask.tunables["cudnn_estimate_us"] = std::llround(cudnn_s * 1e6);
  subtask.tunables["forced"] = 1;
  return true;
}

// The automatic choice (conv_engine_call): the project's kernel, with cuDNN as its timed
// alternative inside the band; false: cuDNN. Under `math` tf32 / bf16 the implicit GEMM makes one
// TF32 product and its cuDNN alternative uses TF32 engines (tensor_math).
bool choose_conv_kernel(Subtask& subtask, const ConvSpec& spec, const GpuPeaks& peaks,
                        TensorMath math) {
  const ConvEngineCall call = conv_engine_call(spec, peaks, math);
  if (call.kernel.empty()) return false;
  subtask.kernel = call.kernel;
  if (math != TensorMath::fp32)
    subtask.tunables["tensor_math"] = static_cast<int64_t>(TensorMath::tf32);
  subtask.tunables["estimate_us"] = std::llround(call.kernel_s * 1e6);
  subtask.tunables["cudnn_estimate_us"] = std::llround(call.cudnn_s * 1e6);
  if (call.timed) {
    subtask.tunables["cudnn_alternative"] = 1;
    subtask.tunables["workspace_bytes"] = cudnn_conv_workspace_bytes(spec, math);  // cuDNN's
  }
  return true;
}

// kernels/rnn.cuh: cuDNN's RNN, its algorithm (standard or persistent) timed at init. TF32 tensor
// cores on the tf32 and bf16 tracks (cuDNN's RNN has no BF16 math for float32 data).
void choose_recurrent(Subtask& subtask, TensorMath math) {
  subtask.kernel = "cudnn_rnn";
  if (math != TensorMath::fp32)
    subtask.tunables["tensor_math"] = static_cast<int64_t>(TensorMath::tf32);
}

// cuDNN picks the engine at init (heuristics, then timing); the plan fixes its math and the
// workspace it may use. No cuDNN convolution engine computes in BF16 on FP32 data, so the bf16
// track's convolutions use TF32 tensor cores as the tf32 track's do.
void choose_conv(Subtask& subtask, const ConvSpec& spec, const GpuPeaks& peaks, TensorMath math,
                 ConvEngine engine) {
  if (spec.epilogue) {
    subtask.tunables["block"] = 256;
    subtask.tunables["vector_width"] = all_vectorizable(spec.epilogue->loads) ? 4 : 1;
  }
  // A prologue (conv_takes_prologue) goes to the depthwise kernel where that can run the
  // convolution, else to the implicit GEMM (forced, or conv_engine_call's pick, as the rule had
  // it).
  if (spec.prologue ? depthwise_conv_eligible(spec)
                    : estimate_depthwise_conv(spec, peaks).prefer_kernel) {
    subtask.kernel = "depthwise_conv";  // exact FP32 on every track: no tensor cores to use
    subtask.tunables["block"] = 256;
    return;
  }
  if (engine != ConvEngine::automatic && choose_forced_conv_kernel(subtask, spec, peaks, engine))
    return;
  // The automatic choice, also where the direct kernel is forced but cannot run the convolution.
  const bool automatic = engine == ConvEngine::automatic || engine == ConvEngine::direct;
  if (automatic && choose_conv_kernel(subtask, spec, peaks, math)) return;
  subtask.kernel = "cudnn_conv";
  subtask.tunables["algo_candidates"] = kConvCandidates;
  subtask.tunables["workspace_bytes"] = cudnn_conv_workspace_bytes(spec, math);
  if (math != TensorMath::fp32)
    subtask.tunables["tensor_math"] = static_cast<int64_t>(TensorMath::tf32);
}

void choose_row(Subtask& subtask, const RowSpec& spec) {
  static constexpr const char* kKernels[] = {"row_softmax", "row_log_softmax", "row_layer_norm",
                                             "row_rms_norm"};
  subtask.kernel = kKernels[static_cast<int>(spec.op)];
  // detail::plan_row: 128-thread blocks of 4 warps, a 512-thread block, or the two-pass loop.
  auto& tunables = subtask.tunables;
  int64_t per_thread = 1, block = 128;
  RowStrategy strategy = RowStrategy::warp;
  if (spec.cols <= 1024) {
    while (per_thread * 32 < spec.cols)
      per_thread *= 2;
  } else if (spec.cols <= 8192) {
    strategy = RowStrategy::block;
    block = 512;
    per_thread = 4;
    while (per_thread * 512 < spec.cols)
      per_thread *= 2;
  } else {
    strategy = RowStrategy::loop;
    block = 512;
    per_thread = 0;
  }
  tunables["row_strategy"] = static_cast<int64_t>(strategy);
  tunables["block"] = block;
  if (per_thread > 0) tunables["per_thread"] = per_thread;
  const bool vector = spec.cols % 4 == 0 && vectorizable(spec.input) &&
                      (!spec.prologue || all_vectorizable(spec.prologue->loads));
  tunables["vector_width"] = vector ? 4 : 1;
}

// The split GEMM rated behind strict FP32 but within the model's error of it (the timed band of
// conv_engine_call), and not too short to time: the program times the two at init.
bool gemm_timed(const GemmEstimate& estimate) {
  const double split_s =
      estimate.prefer_tf32x3_kernel ? estimate.tf32x3_kernel_s : estimate.tf32x3_s;
  return split_s > 0 && estimate.fp32_s >= kTimedEngineMinSeconds &&
         split_s <= kTimedEngineRatio * estimate.fp32_s;
}

}  // namespace

std::string_view reduce_strategy_name(int64_t strategy) {
  static constexpr std::string_view kNames[] = {"row_per_warp", "row_per_block", "columns",
                                                "row_per_thread"};
  return strategy >= 0 && strategy < std::ssize(kNames) ? kNames[strategy] : "unknown";
}

std::string_view row_strategy_name(int64_t strategy) {
  static constexpr std::string_view kNames[] = {"warp", "block", "loop"};
  return strategy >= 0 && strategy < std::ssize(kNames) ? kNames[strategy] : "unknown";
}

ScanStrategy plan_scan_strategy(int64_t outer, int64_t length, int64_t inner) {
  (void)outer, (void)length;
  return inner == 1 ? ScanStrategy::warp_rows : ScanStrategy::columns;
}

std::string_view scan_strategy_name(int64_t strategy) {
  static constexpr std::string_view kNames[] = {"warp_rows", "columns"};
  return strategy >= 0 && strategy < std::ssize(kNames) ? kNames[strategy] : "unknown";
}

std::string_view tensor_math_name(int64_t math) {
  static constexpr std::string_view kNames[] = {"fp32", "tf32", "bf16"};
  return math >= 0 && math < 3 ? kNames[math] : "unknown";
}

std::optional<TensorMath> tensor_math_from_name(std::string_view name) {
  for (int64_t math = 0; math < 3; ++math)
    if (tensor_math_name(math) == name) return static_cast<TensorMath>(math);
  return std::nullopt;
}

TensorMath subtask_tensor_math(const Subtask& subtask) {
  const auto found = subtask.tunables.find("tensor_math");
  if (found == subtask.tunables.end() || found->second < 0 || found->second > 2)
    return TensorMath::fp32;
  return static_cast<TensorMath>(found->second);
}

ReduceLaunch plan_reduce_launch(int64_t outer, int64_t reduce, int64_t inner) {
  // Constants of kernels/reduction.cuh: they decide how sums are grouped (result bits).
  constexpr int64_t kThreadRowMax = 16, kWarpRowMax = 1024, kSplitBelowBlocks = 1024,
                    kSplitTargetBlocks = 4096, kMinRowSplit = 8192, kMinColumnSplit = 256,
                    kPartialBytes = 16;
  ReduceLaunch launch;
  int64_t work = 0, min_chunk = 0;
  if (inner == 1) {
    work = outer;
    if (reduce <= kThreadRowMax) {
      launch.strategy = ReduceStrategy::row_per_thread;
      launch.block_x = 256;
      return launch;
    }
    if (reduce <= kWarpRowMax) {
      launch.strategy = ReduceStrategy::row_per_warp;
      launch.block_x = 256;
      return launch;
    }
    launch.strategy = ReduceStrategy::row_per_block;
    launch.block_x = reduce >= 8192 ? 512 : 256;
    min_chunk = kMinRowSplit;
  } else {
    launch.strategy = ReduceStrategy::columns;
    int64_t bx = 1;
    while (bx < 32 && bx < inner)
      bx *= 2;
    int64_t by = 256 / bx;
    while (by > 1 && by / 2 >= reduce)
      by /= 2;
    launch.block_x = bx;
    launch.block_y = by;
    work = outer * ((inner + bx - 1) / bx);
    min_chunk = kMinColumnSplit;
  }
  if (work < kSplitBelowBlocks) {
    int64_t splits =
        (kSplitTargetBlocks + std::max<int64_t>(work, 1) - 1) / std::max<int64_t>(work, 1);
    splits = std::min(splits, reduce / min_chunk);
    if (splits > 1) {
      const int64_t chunk = (reduce + splits - 1) / splits;
      launch.splits = (reduce + chunk - 1) / chunk;
      launch.workspace_bytes = launch.splits * outer * inner * kPartialBytes;
    }
  }
  return launch;
}

GemmEstimate estimate_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_elements,
                           int64_t b_elements, bool b_constant, const GpuPeaks& peaks,
                           bool kernel_available) {
  GemmEstimate estimate;
  const double flops = 2.0 * static_cast<double>(batch) * static_cast<double>(m) *
                       static_cast<double>(n) * static_cast<double>(k);
  if (peaks.fp32_tflops <= 0 || peaks.dram_gbps <= 0) return estimate;
  const double bandwidth = peaks.dram_gbps * 1e9;
  const double a = static_cast<double>(a_elements), b = static_cast<double>(b_elements);
  const double c = static_cast<double>(batch) * static_cast<double>(m) * static_cast<double>(n);
  // A GEMM takes the longer of its arithmetic and reading its operands once (a small m makes
  // a big weight matrix the cost).
  estimate.fp32_s = std::max(flops / (peaks.fp32_tflops * 1e12 * kFp32GemmEfficiency),
                             4.0 * (a + b + c) / bandwidth) +
                    kLaunchSeconds;
  if (peaks.tf32_tflops <= 0) return estimate;
  // The split copies are three times the operands; making them reads 4 and writes 12 bytes per
  // element (B once at init when it is constant).
  const double split_elements = a + (b_constant ? 0.0 : b);
  const int launches = 1 + (b_constant ? 1 : 2);
  estimate.tf32x3_s = std::max(3.0 * flops / (peaks.tf32_tflops * 1e12 * kTf32GemmEfficiency),
                               4.0 * (3.0 * a + 3.0 * b + c) / bandwidth) +
                      16.0 * split_elements / bandwidth + launches * kLaunchSeconds;
  auto tiled = [](int64_t extent) {
    return static_cast<double>((extent + kTf32x3KernelTile - 1) / kTf32x3KernelTile *
                               kTf32x3KernelTile);
  };
  const double tile_flops =
      2.0 * static_cast<double>(batch) * tiled(m) * tiled(n) * static_cast<double>(k);
  // The kernel reads A and the two split copies of B (8 bytes per element), made once at init
  // for a constant B and by a pass per call otherwise (read 4, write 8 bytes per element).
  estimate.tf32x3_kernel_s =
      std::max(3.0 * tile_flops / (peaks.tf32_tflops * 1e12 * kTf32x3KernelEfficiency),
               (4.0 * a + 8.0 * b + 4.0 * c) / bandwidth) +
      (b_constant ? 0.0 : 12.0 * b / bandwidth + kLaunchSeconds) + kLaunchSeconds;
  estimate.prefer_tf32x3_kernel = kernel_available && estimate.tf32x3_kernel_s < estimate.tf32x3_s;
  const double split_s =
      estimate.prefer_tf32x3_kernel ? estimate.tf32x3_kernel_s : estimate.tf32x3_s;
  estimate.prefer_tf32x3 = split_s <= kTf32x3Margin * estimate.fp32_s;
  return estimate;
}

int64_t attention_head_dim_tile(const AttentionSpec& spec) {
  return (std::max(spec.head_dim, spec.value_dim) + 7) / 8 * 8;
}

std::string_view attention_math_name(const Subtask& subtask) {
  switch (subtask_tensor_math(subtask)) {
    case TensorMath::tf32:
      return "tf32";
    case TensorMath::bf16:
      return "bf16";
    case TensorMath::fp32:
      break;
  }
  const auto split = subtask.tunables.find("split_tf32x3");
  return split != subtask.tunables.end() && split->second == 1 ? "tf32x3" : "fp32_fma";
}

std::string format_tunable(const std::string& key, int64_t value) {
  if (key == "reduce_strategy") return fmt::format("{}", reduce_strategy_name(value));
  if (key == "row_strategy") return fmt::format("{}", row_strategy_name(value));
  if (key == "scan_strategy") return fmt::format("{}", scan_strategy_name(value));
  if (key == "tensor_math") return fmt::format("{}", tensor_math_name(value));
  return fmt::format("{}={}", key, value);
}

int64_t cudnn_conv_workspace_bytes(const ConvSpec& spec, TensorMath math) {
  if (math == TensorMath::fp32) return kConvWorkspaceBytes;
  auto elements = [](int64_t leading, const std::vector<int64_t>& sizes) {
    return std::accumulate(sizes.begin(), sizes.end(), leading, std::multiplies<int64_t>());
  };
  const int64_t operands =
      elements(spec.batch * spec.in_channels, spec.input) +
      elements(spec.out_channels * (spec.in_channels / spec.groups), spec.kernel) +
      elements(spec.batch * spec.out_channels, spec.output);
  constexpr int64_t kMiB = int64_t{1} << 20;
  const int64_t bytes = (4 * operands + kMiB - 1) / kMiB * kMiB;
  return std::clamp(bytes, kConvWorkspaceBytes, kConvTf32WorkspaceMaxBytes);
}

bool conv_takes_prologue(const ConvSpec& spec, const GpuPeaks& peaks, TensorMath math,
                         ConvEngine conv_engine) {
  if (depthwise_conv_eligible(spec)) return true;
  if (spec.transposed || !spec.x.is_contiguous() || !conv_igemm_eligible(spec)) return false;
  if (conv_engine == ConvEngine::igemm_tf32x3) return true;
  return conv_engine == ConvEngine::automatic &&
         conv_engine_call(spec, peaks, math).kernel == "igemm_tf32x3_conv";
}

void choose_kernel(Subtask& subtask, const ir::Graph& graph, const GpuPeaks& peaks, TensorMath math,
                   ConvEngine conv_engine) {
  subtask.tunables.clear();
  std::visit(
      [&](const auto& spec) {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, MatmulSpec>) {
          subtask.kernel = "cublaslt_matmul";
          const double work = 2.0 * static_cast<double>(spec.batch * spec.m * spec.n * spec.k);
          subtask.tunables["algo_candidates"] = work < 1e8 ? 4 : 8;
          subtask.tunables["workspace_bytes"] = kMatmulWorkspaceBytes;
          subtask.tunables["transpose_a"] = column_major(spec.a) ? 1 : 0;
          subtask.tunables["transpose_b"] = column_major(spec.b) ? 1 : 0;
          const bool b_constant = spec.b.base.kind == ir::ValueRef::Kind::param;
          const GemmEstimate estimate =
              estimate_gemm(spec.batch, spec.m, spec.n, spec.k, spec.batch * spec.m * spec.k,
                            (spec.b.strides[0] == 0 ? 1 : spec.batch) * spec.k * spec.n, b_constant,
                            peaks, !column_major(spec.a));
          if (math != TensorMath::fp32) {
            subtask.tunables["tensor_math"] = static_cast<int64_t>(math);
          } else if (estimate.prefer_tf32x3 || gemm_timed(estimate)) {
            subtask.tunables["split_tf32x3"] = 1;
            subtask.tunables["split_b_at_init"] = b_constant ? 1 : 0;
            if (estimate.prefer_tf32x3_kernel) subtask.tunables["tf32x3_kernel"] = 1;
            if (!estimate.prefer_tf32x3) subtask.tunables["strict_alternative"] = 1;
          }
          if (spec.epilogue) {
            subtask.tunables["block"] = 256;
            subtask.tunables["vector_width"] = all_vectorizable(spec.epilogue->loads) ? 4 : 1;
          }
        } else if constexpr (std::is_same_v<T, ConvSpec>) {
          choose_conv(subtask, spec, peaks, math, conv_engine);
        } else if constexpr (std::is_same_v<T, ReductionSpec>) {
          choose_reduction(subtask, spec);
        } else if constexpr (std::is_same_v<T, RowSpec>) {
          choose_row(subtask, spec);
        } else if constexpr (std::is_same_v<T, ElementwiseSpec>) {
          subtask.kernel = "elementwise";
          subtask.tunables["block"] = 256;
          bool vector = !spec.shape.empty() && spec.shape.back() % 4 == 0 &&
                        all_vectorizable(spec.body.loads);
          subtask.tunables["vector_width"] = vector ? 4 : 1;
        } else if constexpr (std::is_same_v<T, PoolSpec>) {
          subtask.kernel = "pool";  // kernels/pooling.cuh: a thread per output, grid-stride
          subtask.tunables["block"] = 256;
        } else if constexpr (std::is_same_v<T, AttentionSpec>) {
          // head_dim_tile: head and value dims rounded up to the kernels' 8. The products: the
          // track's tensor cores on tf32 / bf16 (as GEMMs), on fp32 3xTF32 or FP32 FMA
          // (kAttentionFp32SplitTf32x3; FMA where no TF32 peak is allowed).
          subtask.kernel = "flash_attention";
          subtask.tunables["block_m"] = kAttentionBlockM;
          subtask.tunables["block_n"] = kAttentionBlockN;
          subtask.tunables["head_dim_tile"] = attention_head_dim_tile(spec);
          if (math != TensorMath::fp32)
            subtask.tunables["tensor_math"] = static_cast<int64_t>(math);
          else if (kAttentionFp32SplitTf32x3 && peaks.tf32_tflops > 0)
            subtask.tunables["split_tf32x3"] = 1;
        } else if constexpr (std::is_same_v<T, ScanSpec>) {
          subtask.kernel = "scan";  // kernels/scan.cuh
          subtask.tunables["scan_strategy"] =
              static_cast<int64_t>(plan_scan_strategy(spec.outer, spec.length, spec.inner));
          subtask.tunables["block"] = 256;
        } else if constexpr (std::is_same_v<T, RecurrentSpec>) {
          choose_recurrent(subtask, math);
        } else if constexpr (std::is_same_v<T, GatherSpec>) {
          subtask.kernel = "gather";  // kernels/gather.cuh: a thread per output element
          subtask.tunables["block"] = 256;
        } else if constexpr (std::is_same_v<T, OpaqueSpec>) {
          subtask.kernel = "llm";  // written by an LLM against its signature (hybrid Coder)
        } else {
          subtask.kernel = "copy";
          subtask.tunables["block"] = 256;
          const bool vector = vectorizable(spec.source) && spec.source.is_contiguous() &&
                              (!spec.destination || vectorizable(*spec.destination));
          subtask.tunables["vector_width"] = vector ? 4 : 1;
        }
      },
      subtask.spec);
  (void)graph;
}

}  // namespace stitch::plan
