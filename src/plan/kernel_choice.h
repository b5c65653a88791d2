// Kernel choice and tunables per subtask: which kernel-library entry runs it (kernels/*.cuh) and
// the starting values of its tunables. Keys and values (docs/plan-format.md):
//   all                 block (threads per block), vector_width (4: every access moves 4
//   consecutive
//                       elements as one aligned 16-byte load or one broadcast value)
//   cublaslt_matmul     algo_candidates (heuristic results to time), workspace_bytes,
//                       transpose_a / transpose_b (1: the operand is column-major),
//                       split_tf32x3 (1: split-precision 3xTF32 on tensor cores, FP32-accurate;
//                       chosen by estimate_gemm), tf32x3_kernel (1: the split done on tiles in one
//                       mma.sync kernel, kernels/gemm_tf32x3.cuh; absent: cuBLASLt on split copies,
//                       kernels/matmul_tf32x3.cuh), split_b_at_init (1: B is a parameter, split
//                       once), strict_alternative (1: the split GEMM, rated behind strict FP32 but
//                       within kTimedEngineRatio of it, is timed against a strict LtMatmul at init
//                       and the faster runs: time_gemm_against_strict, kernels/
//                       program_support.cuh), tensor_math (TensorMath; absent: fp32 — strict or
//                       split)
//   cudnn_conv          algo_candidates (engines kept to time at init), workspace_bytes,
//                       tensor_math (tf32 on the tf32 and bf16 tracks; absent: strict FP32)
//   cudnn_rnn           tensor_math (tf32 on the tf32 and bf16 tracks, TF32 tensor cores on float32
//                       data; absent: strict FP32); algorithms are timed at init (rnn.cuh)
//   depthwise_conv      a depthwise 1-d/2-d convolution on the direct FP32 kernel
//                       (kernels/conv_depthwise.cuh), chosen by estimate_depthwise_conv; block
//   igemm_tf32x3_conv   a forward convolution as an implicit GEMM in split-precision 3xTF32
//                       (kernels/conv_igemm_tf32x3.cuh, FP32-accurate; a transposed one as its
//                       output phases', kernels/conv_transpose.cuh), chosen by
//                       conv_engine_call or forced (PlanOptions::conv_engine);
//                       estimate_us / cudnn_estimate_us (the time model's two sides, whole
//                       microseconds: the choice's reason), forced (1: PlanOptions::conv_engine),
//                       cudnn_alternative (1: cuDNN is timed against it at init and the faster
//                       runs, kernels/conv_engine_timing.cuh; with cuDNN's workspace_bytes),
//                       tensor_math (tf32 on the tf32 and bf16 tracks: one TF32 product,
//                       ConvIgemmTf32, and cuDNN's TF32 engines as the alternative)
//   direct_conv         a convolution of few products per output on the direct FP32 kernel
//                       (kernels/conv_direct.cuh, exact FP32 on every track; a transposed one as
//                       its phases', kernels/conv_transpose.cuh), chosen by conv_engine_call
//                       only with cudnn_alternative (its model is not calibrated yet) or forced;
//                       estimate_us / cudnn_estimate_us, forced, cudnn_alternative
//   flash_attention     block_m x block_n query x key tiles, head_dim_tile (head and value dims
//                       rounded up to 8); the products' arithmetic (attention_math_name):
//                       tensor_math (tf32 / bf16 tracks: TF32 or BF16 mma.sync,
//                       kernels/attention_mma.cuh), else split_tf32x3 (1: 3xTF32 mma.sync,
//                       FP32-accurate; kAttentionFp32SplitTf32x3), else FP32 FMA
//                       (kernels/attention.cuh)
//   reduce              reduce_strategy (ReduceStrategy), block_x, block_y, splits (blocks sharing
//                       one output), workspace_bytes (the split partials)
//   row_*               row_strategy (RowStrategy), per_thread (values kept in registers)
// The reduce and row choices mirror the kernel library's own pure planners (detail::plan_reduce in
// kernels/reduction.cuh, detail::plan_row in kernels/row.cuh), so the plan shows what will run and
// sizes the reduction workspace exactly. Keep them in sync (tests/plan/cost_test.cc pins cases).
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "plan/plan.h"
#include "util/enum_names.h"

namespace stitch::plan {

// How a reduction maps onto the GPU (kernels/reduction.cuh).
enum class ReduceStrategy : int64_t {
  row_per_warp = 0,    // inner == 1, rows up to 1024: a warp per row
  row_per_block = 1,   // inner == 1, longer rows: a block per row (split when rows are few)
  columns = 2,         // inner > 1: threads across inner and reduce, tree-combined
  row_per_thread = 3,  // inner == 1, rows up to 16 (pooling windows): a thread per row
};
std::string_view reduce_strategy_name(int64_t strategy);
// How a row kernel maps onto the GPU (kernels/row.cuh).
// kernels/scan.cuh's ScanStrategy: the Planner picks it (tunable scan_strategy), the program
// passes it to launch_scan.
enum class ScanStrategy : int64_t {
  warp_rows = 0,  // inner == 1: a warp per row, 32-position steps scanned by shuffles, in order
  columns = 1,    // inner > 1: a thread per (outer, inner) column, sequential along the axis
};
ScanStrategy plan_scan_strategy(int64_t outer, int64_t length, int64_t inner);
std::string_view scan_strategy_name(int64_t strategy);

enum class RowStrategy : int64_t {
  warp = 0,   // cols <= 1024: a warp per row, the row in registers
  block = 1,  // cols <= 8192: a 512-thread block per row, the row in registers
  loop = 2,   // longer: a block per row, two passes over global memory
};
std::string_view row_strategy_name(int64_t strategy);
// What a GEMM computes with on FP32 data (kernels/matmul.cuh LtMatmul::Compute), chosen per plan
// from the precision track (PlanOptions::tensor_math): fp32 keeps strict FP32 or split 3xTF32,
// both FP32-accurate; tf32 and bf16 use that tensor-core math directly (FP32 accumulation).
enum class TensorMath : int64_t { fp32 = 0, tf32 = 1, bf16 = 2 };
std::string_view tensor_math_name(int64_t math);
std::optional<TensorMath> tensor_math_from_name(std::string_view name);
// The subtask's tensor_math tunable (fp32 when absent).
TensorMath subtask_tensor_math(const Subtask& subtask);

// detail::plan_reduce of the kernel library: strategy, block shape, splits and partials.
struct ReduceLaunch {
  ReduceStrategy strategy = ReduceStrategy::row_per_warp;
  int64_t block_x = 32, block_y = 1, splits = 1, workspace_bytes = 0;
};
ReduceLaunch plan_reduce_launch(int64_t outer, int64_t reduce, int64_t inner);

inline constexpr int64_t kMatmulWorkspaceBytes = 32 << 20;  // cuBLASLt's recommended on Hopper
// cuDNN's engines for one convolution: the heuristics' first kConvCandidates that fit
// kConvWorkspaceBytes are timed at init (kernels/conv.cuh CudnnConv::kMaxCandidates). 256 MiB:
// at 64 MiB the H200 had no strict-FP32 engine for some of EfficientNet's convolutions.
inline constexpr int64_t kConvWorkspaceBytes = 256 << 20;
// Under TF32 math (the tf32 and bf16 tracks) cuDNN's tensor-core engines for NCHW data transpose
// the operands to NHWC in the workspace: at 256 MiB an H100 had none for AlexNet's larger layers
// (batch 1024: conv2's x alone is 287 MB) and ran FP32 FFMA engines instead: the program took
// 65 ms where PyTorch's TF32 forward took 22 (2026-12-06). There the workspace is as large as x,
// w and y together (a MiB multiple), from kConvWorkspaceBytes up to kConvTf32WorkspaceMaxBytes.
inline constexpr int64_t kConvTf32WorkspaceMaxBytes = int64_t{4} << 30;
int64_t cudnn_conv_workspace_bytes(const ConvSpec& spec, TensorMath math);
inline constexpr int64_t kConvCandidates = 8;

// The time model behind split_tf32x3: strict FP32 at kFp32GemmEfficiency of the FP32 peak, against
// three times the work at kTf32GemmEfficiency of the TF32 tensor-core peak plus splitting the
// operands (read 4 bytes, write 12 per element; B not at all when it is split at init) and one
// launch per split. 3xTF32 is chosen when it is estimated at most kTf32x3Margin of FP32's time.
// The one-kernel 3xTF32 GEMM (GemmTf32x3) splits A on its tiles and reads B's two split copies
// (made at init for a parameter, else by a pass per call): three times the work of its 128 x 128
// output tiles (m and n rounded up) at kTf32x3KernelEfficiency of the TF32 peak, or its operands
// at the DRAM bandwidth; chosen over the split copies when
// estimated faster (and A is not transposed). Its efficiency is the Hopper kernel's (wgmma + TMA,
// B split once at init for a parameter): a median 67% of the 3xTF32 floor over KernelBench level
// 2's GEMM shapes on an H200 (2026-12-03, tests/kernels/gemm_tf32x3_bench.cu --fused), against
// 64-72% for cuBLASLt on split copies with m >= 1024 and 40-44% with m = 128 (kernels/README.md).
// (Built for sm_80 the program runs the mma.sync kernel, at about 0.31.)
inline constexpr double kFp32GemmEfficiency = 0.75;  // cuBLAS SIMT FP32, measured ~0.75 on H200
inline constexpr double kTf32GemmEfficiency = 0.55;
inline constexpr double kTf32x3KernelEfficiency = 0.65;  // wgmma kernel, H200, 2026-12-03
inline constexpr int64_t kTf32x3KernelTile = 128;
inline constexpr double kTf32x3Margin = 0.8;
inline constexpr double kLaunchSeconds = 4e-6;
struct GemmEstimate {
  double fp32_s = 0, tf32x3_s = 0, tf32x3_kernel_s = 0;
  bool prefer_tf32x3 = false;         // split precision (either engine) over strict FP32
  bool prefer_tf32x3_kernel = false;  // ... in one kernel rather than on split copies
};
// kernel_available: GemmTf32x3 can run the GEMM (A not transposed).
GemmEstimate estimate_gemm(int64_t batch, int64_t m, int64_t n, int64_t k, int64_t a_elements,
                           int64_t b_elements, bool b_constant, const GpuPeaks& peaks,
                           bool kernel_available = true);

// The convolution engines' models from here to conv_engine_call (depthwise, implicit GEMM,
// direct, the call between them and cuDNN) are implemented in conv_estimates.cc.
// The time model behind depthwise_conv. A depthwise convolution does kernel-size multiply-adds per
// output, a few FLOPs per byte: both engines are estimated as a fixed cost per launch plus
// max(bytes / (DRAM · memory efficiency), FLOPs / (FP32 peak · compute efficiency)). The constants
// fit what the H200 measured (2026-12-03, tests/kernels/conv_depthwise_bench.cu over MobileNetV2,
// EfficientNet-B0 and its MBConv block, a channel multiplier of 2, 1-d and a 31x31 window, cuDNN
// tuned with the fp32 track's engines): the tiled kernel reached 0.40-0.61 of DRAM bandwidth on
// planes of 28x28 and up (cuDNN 0.14-0.35) and was 1.2-4.0x faster there (2.8x on the MBConv
// block's 5x5 stride 2 at 224x224); on 7x7 and 14x14 planes both take 9-18 us, most of it fixed
// (the kernel 0.79-1.36x); 1-d: the kernel 0.26, cuDNN 0.33 (0.80x); the 31x31 window is
// compute-bound, the kernel 8% of the FP32 peak, cuDNN 6.4% (1.24x), where the MBConv block shows
// the kernel at 10% or more (its 25 taps in 671 us).
inline constexpr double kDepthwiseKernelMemory = 0.55;
inline constexpr double kDepthwiseKernelMemory1d = 0.3;
inline constexpr double kDepthwiseKernelCompute = 0.1;
inline constexpr double kDepthwiseKernelFixedSeconds = 8e-6;
inline constexpr double kCudnnDepthwiseMemory = 0.2;
inline constexpr double kCudnnDepthwiseMemory1d = 0.33;
inline constexpr double kCudnnDepthwiseCompute = 0.064;
inline constexpr double kCudnnDepthwiseFixedSeconds = 7e-6;
struct DepthwiseEstimate {
  double kernel_s = 0, cudnn_s = 0;
  bool eligible = false;       // the direct kernel can run it (depthwise_conv_eligible)
  bool prefer_kernel = false;  // ... and is estimated faster
};
// 1-d or 2-d, not transposed, groups == in_channels (out_channels a multiple), contiguous NCHW.
bool depthwise_conv_eligible(const ConvSpec& spec);
DepthwiseEstimate estimate_depthwise_conv(const ConvSpec& spec, const GpuPeaks& peaks);

// The time model behind igemm_tf32x3_conv, on the fp32 track. cuDNN in strict FP32 (no tensor
// cores) against the implicit-GEMM 3xTF32 kernel (kernels/conv_igemm_tf32x3.cuh, its wgmma kernel
// on Hopper). cuDNN: kCudnnStrictConvEfficiency of the FP32 peak (direct FLOPs; its Winograd / FFT
// engines count as faster direct ones). The kernel: its 128 x 128 tiles (positions and output
// channels per group rounded up) in waves over the SMs (split K, up to 8 ways, when the tiles are
// fewer than the SMs), each tile's K tiles of 32 at the TF32 peak's per-SM share times
// kConvIgemmPeakEfficiency · kt / (kt + kConvIgemmFillTiles) — a tile's pipeline fill and epilogue
// weigh on short K. Where the channels per group are a multiple of 4 the kernel gathers 16-byte
// chunks from a channels-last copy of x, made by one more pass over the input (read and written at
// the DRAM bandwidth; no pass where x is stored channels-last already, layout.h); also where one
// group's channels round up to a multiple of 4 by at most a third (conv_igemm_gather_channels: 3 ->
// 4), the copy then holding zero channels and K counting them; else 4-byte elements from x itself
// (from an NCDHW copy of a channels-last x, that pass again), at kConvIgemmScalarGatherEfficiency
// of the chunked rate. Where it reads an NCDHW x by TMA boxes (conv_igemm_box_tiles) there is no
// copy, K counts the channels padded to 32 and M the boxes' positions, at the chunked rate (not yet
// measured apart). Each side also at least its bytes at the DRAM bandwidth, plus its launches. The
// kernel is chosen when estimated at most kTf32x3Margin of cuDNN's time. Measured on the H200 by
// tests/kernels/conv_igemm_tf32x3_bench.cu (2026-12-03, AlexNet / VGG16 / ResNet-50 layers, after
// the split-major split-K reduction): cuDNN strict FP32 0.22-0.66 of the FP32 peak (median 0.41);
// the chunked kernel 0.53-0.55 of the TF32 peak with 72-75 K tiles (AlexNet), 0.40-0.54 with 36-144
// (VGG16; 0.20 for 64 output channels), 0.06-0.22 on ResNet-50's small batch-10 layers (few K
// tiles, 64-channel tiles half empty, the transpose); the 4-byte gather (3 input channels)
// 0.06-0.13. After the kernel's instruction cut (2026-12-06, an H100: the same SMs and TF32 peak as
// the H200) the chunked kernel ran at 0.57-0.73 of the TF32 peak with 36-144 K tiles (AlexNet
// 0.70-0.73 with 72-108, VGG16 0.57-0.71; this column counts x's transpose in the kernel's time, as
// the 0.6 fit did), which kConvIgemmPeakEfficiency 0.75 predicts within 0.90-1.03x (0.6: 18-28%
// slow); cuDNN's strict rates were as before.
inline constexpr double kCudnnStrictConvEfficiency = 0.41;
// A transposed convolution's useful FLOPs (the taps each output takes) on cuDNN's strict FP32
// engines, measured on the H200 (2026-12-04, conv_igemm_tf32x3_bench's transposed rows: 64-128
// channels, 3x3(x3), 2-d and 3-d): 0.10-0.18 of the FP32 peak at stride 2 (median 0.15), where
// the kernel's phase convolutions ran 2.3-3.8x faster; at stride 1 (to cuDNN a forward
// convolution of the flipped kernel) the FP32 peak's rate in useful FLOPs on the one 3x3 shape
// measured (an engine doing fewer products, Winograd-like), 1.4x faster than the kernel.
inline constexpr double kCudnnStrictTransposedConvEfficiency = 0.15;
inline constexpr double kCudnnStrictUnitStrideTransposedConvEfficiency = 1.0;
inline constexpr double kConvIgemmPeakEfficiency = 0.75;
inline constexpr double kConvIgemmFillTiles = 10;
inline constexpr double kConvIgemmScalarGatherEfficiency = 0.35;
inline constexpr int64_t kConvIgemmTile = 128;
// At most 64 output channels per group: the kernel's 64-wide tiles (conv_igemm_wgmma_tile_n), K
// tiles of half the products at kConvIgemmNarrowEfficiency of the wide tile's rate. Measured on
// the H200 (2026-12-04, conv_igemm_tf32x3_bench after the persistent kernel's straight-run
// epilogue: VGG16 conv1_2, ResNet-50's 64-channel layers, a DenseNet growth layer, level-2
// convolutions of 16-64 channels and transposed ones of 64): the narrow tiles ran at 1.4-2.4x
// the rate 0.5 predicted (it was set from the kernel before that epilogue); 0.85 puts the
// measured times within 0.7-1.3x of the model's on these shapes. After the instruction cut (an
// H100, 2026-12-06) the wide tile gained more than the narrow one, whose K tiles hold half the
// products for the same gather and splits: level-2 convolutions of 8-64 channels to 64 ran at
// 0.14, 0.23 and 0.37 of the TF32 peak with 3, 5 and 18 K tiles, VGG16 conv1_2 at 0.36 with 18;
// 0.74 of the wide rate (with kConvIgemmPeakEfficiency 0.75) predicts them within 0.80-1.0x.
inline constexpr int64_t kConvIgemmNarrowTile = 64;
inline constexpr double kConvIgemmNarrowEfficiency = 0.74;
inline constexpr int64_t kConvIgemmMaxGroups = 65535;  // one launch's grid.y
// The tf32 and bf16 tracks (math tf32 / bf16): the kernel makes one TF32 product per multiply-add
// instead of three (kernels/conv_igemm_tf32x3.cuh ConvIgemmTf32), at kConvIgemmOneProductEfficiency
// of the three-product rate per product — the producers' gather, which kept up with three
// products, now feeds one — against cuDNN's TF32 engines at kCudnnTf32ConvEfficiency of the TF32
// peak. Measured (tests/kernels/conv_igemm_tf32x3_bench.cu, H100, 2026-12-06 19:5x UTC, one and
// three products side by side, after the one-product kernel came to sum the whole K range in the
// tensor cores): VGG16 conv1_2 (64-wide tile) / conv2_2 / conv5_3 (K split) one product 0.363 /
// 0.225 / 0.052 ms where three took 0.500 / 0.368 / 0.091 — 0.46 / 0.55 / 0.58 of the
// three-product rate per product (0.36-0.39 before the whole-K sums) — and conv3_3 / conv4_3 on
// the 128-wide tile ("1x128") 0.171 / 0.145 against 0.323 / 0.302: 0.63 / 0.69. So one product
// takes 0.53-0.73 of three's time, never more (the model: 1 / (3 · 0.55) = 0.61). The 256-wide
// tile, which one product takes past 128 channels where it runs unsplit (the kernel's
// plan_conv_igemm_wgmma; conv_igemm_wide_tile here), ran those two layers at 0.147 / 0.122 ms:
// kConvIgemmWideTileGain, 1.16-1.19x the 128-wide rate. cuDNN's TF32 ran the five at 0.21-0.54
// of the TF32 peak (median 0.35: the model's 0.2 is low there, but on a short K — 72, level 2's
// 8 -> 64 channels — its engines seemed slower than 0.2; not measured alone): the program times
// cuDNN against the kernel at init inside the timed band (conv_engine_call,
// kTf32TimedEngineRatio) as on the fp32 track.
inline constexpr double kConvIgemmOneProductEfficiency = 0.55;
inline constexpr double kConvIgemmWideTileGain = 1.18;
inline constexpr int64_t kConvIgemmWideTile = 256;
inline constexpr double kCudnnTf32ConvEfficiency = 0.2;
struct ConvIgemmEstimate {
  double kernel_s = 0, cudnn_s = 0;
  bool eligible = false;       // the kernel can run it (conv_igemm_eligible)
  bool prefer_kernel = false;  // ... and is estimated faster (needs TF32 tensor cores)
};
// Forward, or transposed with symmetric padding (its output phases' forward convolutions:
// kernels/conv_transpose.cuh), 1 to 3 spatial dims, contiguous w, x contiguous or (forward)
// channels-last (layout.h), not depthwise (one input channel per group: those stay on cuDNN,
// measured faster there than a direct kernel), indices within the kernel's int32 limits
// (kernels/conv_igemm_tf32x3.cuh). The estimate counts the per-run transpose of x where the
// kernel's gather reads the other layout.
bool conv_igemm_eligible(const ConvSpec& spec);
// The implicit GEMM also reduces the output channels of each position as it stores (ConvIgemm::
// set_channel_reduction, kernels/conv_igemm_tf32x3.cuh): a forward convolution of one group whose
// output channels one tile holds (kConvIgemmMaxReducedChannels, either kernel's), K unsplit.
inline constexpr int64_t kConvIgemmMaxReducedChannels = 128;
bool conv_igemm_reduces_channels(const ConvSpec& spec);
// Whether the one-product kernel runs a forward convolution on its 256-wide tile (mirrors
// kernels/conv_igemm_common.cuh's conv_igemm_wgmma_tile_n and plan_conv_igemm_wgmma, which keeps
// 128 where the wide tiles would split K): more than 128 output channels per group, covered by
// 256-wide tiles with no more padding than by 128-wide ones, and the wide tiles fill the `sms`
// or K is under 16 tiles of 32 (too short to split). Transposed convolutions are modelled on the
// 128-wide tile (their phases are planned one by one).
bool conv_igemm_wide_tile(const ConvSpec& spec, int sms);
ConvIgemmEstimate estimate_conv_igemm(const ConvSpec& spec, const GpuPeaks& peaks,
                                      TensorMath math = TensorMath::fp32);
// The channels per group and position the kernel's chunked gather reads, or 0 where it gathers
// 4-byte elements: the rule of kernels/conv_igemm_common.cuh's conv_igemm_gather_channels
// (ConvIgemmCost.FewChannelsArePaddedToAChunk holds it to the table the kernel's CPU test,
// ConvIgemmWgmmaGather.PadsFewChannelsToAChunk, holds that one to).
int64_t conv_igemm_gather_channels(int64_t in_channels, int64_t groups, int64_t kernel_volume);
// The output tiles of the kernel where it reads x by TMA boxes (kernels/conv_igemm_box_tma.cuh;
// no per-run copy of x, K over the channels padded to 32), or 0 where it does not: a forward
// convolution of one group, stride 1, x contiguous NCDHW with no prologue, rows of x a multiple of
// 4 floats, channels padding to 32 by at most a third, and boxes holding at most an eighth more
// positions than the output (conv_igemm_box_tma_worth). A block's 128 positions are a box of
// 128 x 1 ... 8 x 16 of one image's output (conv_box_tile's rule, mirrored: the fewest positions
// past the output, the widest of equals).
int64_t conv_igemm_box_tiles(const ConvSpec& spec);

// The time model behind direct_conv (kernels/conv_direct.cuh): FP32 FMAs on the CUDA cores for
// convolutions of few products per output (K = in_channels / groups · prod(kernel) up to
// kDirectConvMaxK, and the kernel's smallest tiling within its shared memory), at
// kDirectConvEfficiency of the FP32 peak or its bytes at the DRAM bandwidth, plus a launch.
// Chosen only where forced (STITCH_CONV_ENGINE=direct): on the H200 (2026-12-04,
// conv_igemm_tf32x3_bench's few-channel rows) the 2-d level-2 shapes ran at 0.05-0.32 of the
// FP32 peak, 0.61-0.71x cuDNN's strict FP32; the 3-d rows' cuDNN side was a 2-d convolution
// then (fixed since), so the 3-d comparison is still to run. The efficiency is a first estimate
// (a thread's 4 x 8 outputs take 6 shared loads per 32 FMAs).
inline constexpr int64_t kDirectConvMaxK = 1024;
inline constexpr int64_t kDirectConvSharedBytes = 96 * 1024;
inline constexpr double kDirectConvEfficiency = 0.6;
// ConvDirectTf32 (the tf32 and bf16 tracks: one TF32 product per K step on the tensor cores,
// two shared loads per mma): an estimate, above what it reaches. Its cp.async form ran at
// 0.063-0.097 of the TF32 peak on level 2's 2-d rows and 0.031-0.077 on the 3-d ones
// (conv_igemm_tf32x3_bench's few-channel "dir tf32" column, H100, 2026-12-07 15:30 UTC) — and
// still beat cuDNN's TF32 engines on 8 -> 64 channels (2.25 against 2.56 ms) and the 3-d rows,
// whose model (kCudnnTf32ConvEfficiency) is as optimistic on these few-channel shapes. Kept
// until both are calibrated on them: the choice is timed against cuDNN at init.
inline constexpr double kDirectConvTf32Efficiency = 0.25;
struct DirectConvEstimate {
  double kernel_s = 0, cudnn_s = 0;
  bool eligible = false;  // the kernel can run it (direct_conv_eligible)
};
// What conv_igemm_eligible accepts with x contiguous (1 to 3 spatial dims, not depthwise, int32
// indices; transposed with symmetric padding, here also dilation 1: its output phases' forward
// convolutions, kernels/conv_transpose.cuh), K and the input patch within the kernel's limits
// (mirrors plan_direct_conv in kernels/conv_direct.cuh; for a transposed one, bounds every
// phase's).
// Under `math` tf32 / bf16 the kernel (ConvDirectTf32) makes one TF32 product where its
// tensor-core tiling fits the shared memory (direct_conv_one_product; 16-channel slices take
// taller patches), else FP32 FMAs, against cuDNN's TF32 engines.
bool direct_conv_eligible(const ConvSpec& spec, TensorMath math = TensorMath::fp32);
bool direct_conv_one_product(const ConvSpec& spec, TensorMath math);
// The direct kernel also reduces the output channels of each position as it stores
// (ChannelReduction, kernels/channel_reduction.cuh): a forward convolution of one group whose
// output channels one block holds (8 slices: 64 on FP32 FMAs, 128 on the tensor cores under `math`
// tf32 / bf16), with the warps' partials in its shared memory.
bool direct_conv_reduces_channels(const ConvSpec& spec, TensorMath math);
DirectConvEstimate estimate_direct_conv(const ConvSpec& spec, const GpuPeaks& peaks,
                                        TensorMath math = TensorMath::fp32);

// The engine call with no override, where TF32 tensor cores may be used (none under
// --strict-fp32-gemm: cuDNN then), by the ratio of the kernel's estimate to cuDNN's
// (estimate_conv_igemm's cuDNN model: strict FP32 on the fp32 track, TF32 engines under `math`
// tf32 / bf16, where the kernel makes one product):
//   the implicit GEMM at ratio <= kConfidentKernelRatio (kTf32ConfidentKernelRatio under TF32
//     math): the kernel;
//   the implicit GEMM at ratio <= kTimedEngineRatio: the kernel, with cuDNN as its alternative
//     (`timed`): the program times the two at init and runs the faster
//     (kernels/conv_engine_timing.cuh);
//   else the direct kernel at ratio <= kTimedEngineRatio, timed likewise (its model is not
//     calibrated yet: it never runs untimed, and never displaces a better-rated implicit GEMM);
//     under TF32 math (ConvDirectTf32) it is asked first, timed likewise, where rated faster
//     than the implicit GEMM (few products per output: the GEMM's K tiles mostly empty);
//   else cuDNN. Nothing is timed where cuDNN cannot run the convolution (an x neither dense nor,
//     under cudnn_takes_channels_last, channels-last) or it is too small to be worth it (cuDNN's
//     estimate under kTimedEngineMinSeconds). Where cuDNN's grid is under-filled
//     (cudnn_grid_underfilled, below) the band is kUnderfilledTimedRatio and the floor
//     kUnderfilledMinSeconds.
// The confident side is the implicit GEMM's own margin (kTf32x3Margin), where the bench rows it
// was calibrated on agree with the model (ConvIgemmCost.PicksTheEngineTheH200MeasuredFaster); the
// timed band above it is the model's error elsewhere: 1.6-3x off on shapes it was not calibrated
// on (the direct kernel's 2-d level-2 rows; cuDNN's transposed engines before calibration).
// cuDNN's model is a full grid's efficiency; where its output tiles (kCudnnGridTileM x
// kCudnnGridTileN, the FP32 implicit-GEMM kernels' usual) cannot fill the SMs — a small output
// with a long K, as DenseNet201's 7x7 and 14x14 layers (490-1960 positions x 32 channels, K up to
// 17k) — it has no ground at all (a few CTAs, unless the engine splits K), while the implicit GEMM
// splits K: there the band widens to kUnderfilledTimedRatio and the floor drops to
// kUnderfilledMinSeconds (such layers come by the dozen).
inline constexpr double kConfidentKernelRatio = kTf32x3Margin;
inline constexpr double kTimedEngineRatio = 1.5;
inline constexpr double kTimedEngineMinSeconds = 20e-6;
inline constexpr int64_t kCudnnGridTileM = 128, kCudnnGridTileN = 64;
inline constexpr double kUnderfilledTimedRatio = 3.0;
inline constexpr double kUnderfilledMinSeconds = 10e-6;
// Under TF32 math both sides of the model rest on few layers' measurements
// (kConvIgemmOneProductEfficiency, kCudnnTf32ConvEfficiency: five of VGG16): the band is as wide
// as an under-filled grid's, and the kernel runs untimed only where rated below
// kTf32ConfidentKernelRatio of cuDNN — VGG16's 128 -> 128 layer, rated at 0.67, ran 1.07x slower
// than cuDNN's TF32 (0.225 vs 0.211 ms), its 256 -> 256 one, rated at 0.51, 1.07x faster.
inline constexpr double kTf32TimedEngineRatio = 3.0;
inline constexpr double kTf32ConfidentKernelRatio = 0.6;
// cuDNN's output tiles for the convolution (kCudnnGridTileM positions x kCudnnGridTileN channels
// per group) are fewer than the SMs.
bool cudnn_grid_underfilled(const ConvSpec& spec, const GpuPeaks& peaks);
// Whether cuDNN, timed against the kernel under `math`, is given a channels-last x and y inside a
// plan's channels-last region (layout.h). Its TF32 engines are NHWC kernels (an H100's CUPTI
// names, 2026-12-06: sm90_xmma_fprop_implicit_gemm_..._nhwckrsc_nhwc, with transposes of x and y
// around them where the tensors are NCHW), so the tf32 and bf16 tracks keep the region; the fp32
// track's strict FP32 engines include NCHW-only ones (Winograd, FFT), so a convolution timed
// there stays NCHW.
inline bool cudnn_takes_channels_last(TensorMath math) { return math != TensorMath::fp32; }
struct ConvEngineCall {
  std::string kernel;  // "igemm_tf32x3_conv", "direct_conv"; empty: cuDNN
  bool timed = false;  // cuDNN is timed against the kernel at init (tunable cudnn_alternative)
  double kernel_s = 0, cudnn_s = 0;
};
ConvEngineCall conv_engine_call(const ConvSpec& spec, const GpuPeaks& peaks,
                                TensorMath math = TensorMath::fp32);

// Which engine runs the convolutions its kernel can run (conv_igemm_eligible,
// direct_conv_eligible): the time model's pick, or one forced (measurement on a GPU:
// STITCH_CONV_ENGINE, app/planner_options.h).
enum class ConvEngine : uint8_t { automatic, cudnn, igemm_tf32x3, direct };
inline constexpr std::array<std::string_view, 4> kConvEngineNames = {"automatic", "cudnn",
                                                                     "igemm_tf32x3", "direct"};
constexpr const auto& enum_names(ConvEngine) {
  return kConvEngineNames;
}
static_assert(names_every_enumerator(ConvEngine::direct));

// The flash attention kernel's tiles (kernels/attention.cuh AttentionTile: 128 threads, each 4
// query rows x 8 keys of a 64 x 64 score tile) and its head-dim tile (head/value dims up to 128,
// rounded up to 8: one template instance per tile).
inline constexpr int64_t kAttentionBlockM = 64;
inline constexpr int64_t kAttentionBlockN = 64;
int64_t attention_head_dim_tile(const AttentionSpec& spec);
// The fp32 track's attention arithmetic, the one switch: true runs both products as split-precision
// 3xTF32 on tensor cores (kernels/attention_mma.cuh; FP32-accurate: its accumulators take at most
// 96-192 products before an FP32 add, as the 3xTF32 GEMM's, whose error norm measured 1.2e-7 to
// 3.3e-7 — far under the track's 5e-5), false the FP32 FMA kernel (kernels/attention.cuh).
// tests/kernels/attention_bench.cu on the H200 (2026-12-02): 3xTF32 is faster at all seven shapes
// (1.15-2.0x the FMA kernel; 0.90-4.8x cuBLAS FP32 plus softmax) at the same error (max relative
// 3.0e-7 against FMA's 2.0e-7, both under 2.4e-6 ragged). Without TF32 tensor cores (or with
// --strict-fp32-gemm) the FMA kernel runs either way.
inline constexpr bool kAttentionFp32SplitTf32x3 = true;
// A flash_attention subtask's arithmetic from its tunables, named as kernels/attention_mma.cuh's
// AttentionMath: "tf32" / "bf16" (tensor_math), "tf32x3" (split_tf32x3), else "fp32_fma".
std::string_view attention_math_name(const Subtask& subtask);

// `math`: what GEMMs compute with; fp32 leaves the strict / split-3xTF32 choice to the time model.
// `conv_engine`: forces the convolution engine where the kernel can run (any track).
void choose_kernel(Subtask& subtask, const ir::Graph& graph, const GpuPeaks& peaks,
                   TensorMath math = TensorMath::fp32,
                   ConvEngine conv_engine = ConvEngine::automatic);

// Fusion rule F10 (fusion.h): whether a convolution, as planned without a prologue, takes the
// elementwise chain that produces its input as one — where the kernel choose_kernel then gives it
// applies an input transform: the depthwise kernel as it loads, or the implicit GEMM of a forward
// convolution with x dense NCDHW as it copies x (ConvIgemmTf32x3::set_input_transform), chosen by
// conv_engine_call or forced; cuDNN, timed against it, reads that transformed copy. Same
// arguments as choose_kernel's.
bool conv_takes_prologue(const ConvSpec& spec, const GpuPeaks& peaks, TensorMath math,
                         ConvEngine conv_engine);

// "strategy=block_per_row" for enum-valued tunables, "block=256" otherwise.
std::string format_tunable(const std::string& key, int64_t value);

}  // namespace stitch::plan
