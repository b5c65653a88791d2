// FP32-accurate convolution on TF32 tensor cores: an implicit-GEMM forward convolution with the
// split-precision 3xTF32 arithmetic of the GEMM kernels, for the fp32 track's convolutions, where
// cuDNN offers only strict FP32 (no tensor cores) or plain TF32 (not FP32 accurate). The GEMM view
// and the gather of A from the input: conv_igemm_common.cuh.
//
// Two kernels, as for the GEMM (gemm_tf32x3.cuh), and ConvIgemmTf32x3 picks one per device:
// - conv_igemm_tf32x3_wgmma.cuh (sm_90a, Hopper): the wgmma GEMM's warp-specialised pipeline,
//   the weight split once at init into TMA-loaded TF32 copies, A loaded by the im2col TMA where
//   it applies (conv_igemm_im2col_tma.cuh) or gathered by cp.async, split K for small outputs;
// - the mma.sync kernel here (sm_80 and later; left out of sm_90a code unless
//   STITCH_GEMM_TF32X3_MMA_SYNC_ON_SM90A): the mma.sync GEMM's arithmetic and tiling, reused from
//   gemm_tf32x3.cuh (128 x 128 tiles of positions x channels, 8 warps of 64 x 32, K tiles of 32 in
//   a 4-stage cp.async ring, each element split where it is used, each K tile's tensor-core sum
//   added to the FP32 accumulator on the CUDA cores). Its gather: a thread owns two tile rows (r
//   and r + 64) and every fourth K column; the shared tile row of 40 floats makes a warp's write
//   a 2-way bank conflict.
// Either way the error is the GEMM kernels' (FP32 level), judged by the fp32 track's error norm.
//
// Fused epilogue: y = act(conv + bias[co]) with MatmulEpilogue's activations (none / ReLU / GELU,
// tanh form) as the GEMM's, then an output transform where run is given one (plane_transform.cuh's
// signature: the elementwise rest of the convolution's epilogue). Fused prologue
// (set_input_transform): a per-(image, channel) transform of x (plane_transform.cuh: a
// training-mode BatchNorm's normalisation and activation) applied as each run copies x into the
// layout the gather reads. tests/kernels/conv_igemm_tf32x3_bench.cu times both against cuDNN strict
// FP32 and TF32 on an H200; the planner's estimate_conv_igemm (src/plan/kernel_choice.h) models its
// times (kernels/README.md has both).
//
// ConvIgemm::init (at init) picks the kernel, allows its shared memory and allocates the
// weight's split copies; prepare_weights splits a parameter weight once; run then allocates and
// synchronises nothing (CUDA-graph capturable).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "channel_reduction.cuh"
#include "conv_igemm_common.cuh"
#include "conv_igemm_tf32x3_wgmma.cuh"
#include "gemm_tf32x3.cuh"
#include "gemm_tf32x3_common.cuh"
#include "matmul.cuh"
#include "runtime.cuh"

namespace stitch::kernels {

namespace detail {

#if defined(STITCH_GEMM_MMA_SYNC)
// The mma.sync kernel's channel reduction of the tile at row m0 (one group, N <= kGemmBN: n0 0):
// acc[i][j][r] is row wm·64 + 16i + g + 8(r / 2), column wn·32 + 8j + 2t + r % 2. Each thread
// combines its columns of each of its eight rows, its quad the row's 32 columns of the warp; the
// four warps of a row band leave theirs in `partials` (shared memory, free once every warp's
// products are done), then thread r < 128 combines row r's four and stores its finished value.
template <class Transform, class Reduction>
__device__ __forceinline__ void reduce_conv_rows(const ConvIgemmParams& p, int m0, float* partials,
                                                 const float (&acc)[4][4][4],
                                                 const Transform& transform,
                                                 const Reduction& reduction) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, wm = warp >> 2, wn = warp & 3;
  __syncthreads();  // every warp's last products have read the stages
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int row = wm * 64 + i * 16 + g + 8 * half, m = min(m0 + row, p.m - 1);
      const int image = m / p.out_plane;
      float r = Reduction::identity();
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int channel = wn * 32 + j * 8 + 2 * t + e;
          if (channel < p.n)
            r = Reduction::combine(
                r, conv_result(p, image, channel, acc[i][j][2 * half + e], transform));
        }
      r = combine_over_quad<Reduction>(r);
      if (t == 0) partials[wn * kGemmBM + row] = r;
    }
  __syncthreads();
  const int m = m0 + tid;
  if (tid >= kGemmBM || m >= p.m) return;
  float r = partials[tid];
#pragma unroll
  for (int column = 1; column < 4; ++column)
    r = Reduction::combine(r, partials[column * kGemmBM + tid]);
  p.y[conv_output_offset(p, 0, m, 0)] = reduction.finish(m / p.out_plane, r);
}
#endif

// Reduction: a channel reduction (reduce_conv_rows) or none (store_conv_output).
template <bool kVec4Weights, class Transform, class Reduction>
__global__ void __launch_bounds__(kGemmThreads, 1)
    conv_igemm_tf32x3_kernel(ConvIgemmParams p, const Transform transform,
                             const Reduction reduction) {
#if defined(STITCH_GEMM_MMA_SYNC)
  extern __shared__ float4 conv_smem[];
  float* smem = reinterpret_cast<float*>(conv_smem);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3, wm = warp >> 2, wn = warp & 3;
  GemmTf32x3Args order;  // the GEMM's grouped tile order (only the tile counts are read)
  order.tiles_m = p.tiles_m, order.tiles_n = p.tiles_n, order.splits = 1;
  const GemmTileCoord tile = gemm_tile_coord(order);
  const int group = static_cast<int>(blockIdx.y);
  const int m0 = tile.tm * kGemmBM, n0 = tile.tn * kGemmBN;
  const float* w = p.w + (int64_t{group} * p.n + n0) * p.k;
  const int cols_b = min(kGemmBN, p.n - n0);
  const int k_tiles = (p.k + kGemmBK - 1) / kGemmBK;

  const int gather_row = warp * 8 + (lane & 7), gather_column = lane >> 3;
  ConvIgemmRow rows[2];
  rows[0].start(p, m0 + gather_row, group);
  rows[1].start(p, m0 + gather_row + 64, group);

  auto load = [&](int kt) {
    float* stage = smem + (kt % kGemmStages) * kGemmStageFloats;
    const int k0 = kt * kGemmBK;
    ConvKCursor cursor;
    cursor.start(p, k0 + gather_column);
    gather_conv_columns<2, 64, 8>(p, rows, gather_row, gather_column, cursor,
                                  [stage](int tile_row, int column, const float* src, bool ok) {
                                    cp_async_4(stage + tile_row * kGemmLdK + column, src, ok);
                                  });
    load_k_contiguous<kVec4Weights>(stage + kGemmTileFloats, w, p.k, cols_b, k0, p.k, tid);
  };
  float acc[4][4][4] = {};
  multiply_tiles<true>(smem, k_tiles, load, wm, wn, g, t, acc);
  if constexpr (kReducesChannels<Reduction>) {
    reduce_conv_rows(p, m0, smem, acc, transform, reduction);
  } else {
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r)
          store_conv_output(p, group, m0 + wm * 64 + i * 16 + g + (r >> 1) * 8,
                            n0 + wn * 32 + j * 8 + 2 * t + (r & 1), acc[i][j][r], transform);
  }
#else
  (void)p, (void)transform, (void)reduction;
#endif
}

// Lets the mma.sync kernel (of an output transform and channel reduction) use its 160 KiB of
// dynamic shared memory on the current device. Once per device before the first launch, outside
// any graph capture; the launch fails without it.
template <class Transform = PlaneIdentity, class Reduction = NoChannelReduction>
inline cudaError_t allow_conv_igemm_tf32x3_smem() {
  const int smem = static_cast<int>(kGemmSmemBytes);
  cudaError_t status = cudaFuncSetAttribute(conv_igemm_tf32x3_kernel<true, Transform, Reduction>,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (status == cudaSuccess)
    status = cudaFuncSetAttribute(conv_igemm_tf32x3_kernel<false, Transform, Reduction>,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  return status;
}

// y = act(conv(x, w) + bias) on the mma.sync kernel, stateless, after
// allow_conv_igemm_tf32x3_smem. x [batch, in_channels, input...], w [out_channels, in_channels /
// groups, kernel...], y [batch, out_channels, output...], all contiguous; bias [out_channels] when
// `epilogue` has one (else ignored); `transform` applied to each result after it, then
// `reduction`'s over the channels where it is one (y [batch, 1, output...]: one group, no output
// map, N <= kGemmBN), after allow_conv_igemm_tf32x3_smem<Transform, Reduction>.
// cudaErrorInvalidValue for a shape conv_igemm_shape_problem refuses, a reduction it cannot make
// or a missing pointer; else the launch's status. Code built for sm_90a holds the kernel only with
// STITCH_GEMM_TF32X3_MMA_SYNC_ON_SM90A (ConvIgemmTf32x3 checks; this does not).
template <class Transform = PlaneIdentity, class Reduction = NoChannelReduction>
inline int launch_conv_igemm_tf32x3_mma_sync(const float* x, const float* w, const float* bias,
                                             float* y, const ConvIgemmShape& s,
                                             MatmulEpilogue epilogue, cudaStream_t stream,
                                             const ConvIgemmOutputMap* output_map = nullptr,
                                             const Transform& transform = {},
                                             const Reduction& reduction = {}) {
  constexpr bool kReduces = kReducesChannels<Reduction>;
  if (x == nullptr || w == nullptr || y == nullptr ||
      (epilogue_has_bias(epilogue) && bias == nullptr) || !conv_igemm_shape_problem(s).empty() ||
      (kReduces && (!conv_igemm_channel_reduction_problem(s).empty() || output_map != nullptr)))
    return cudaErrorInvalidValue;
  ConvIgemmParams p = conv_igemm_params(x, w, bias, y, s, epilogue);
  if (output_map != nullptr) conv_igemm_output_map(p, *output_map);
  if (kReduces) conv_igemm_reduced_output(p);
  const dim3 grid(static_cast<unsigned>(int64_t{p.tiles_m} * p.tiles_n),
                  static_cast<unsigned>(s.groups));
  // 16-byte weight loads: every weight row (K floats) starts 16-byte aligned.
  const bool vec4 = p.k % 4 == 0 && is_aligned(w, 16);
  if (vec4)
    conv_igemm_tf32x3_kernel<true, Transform, Reduction>
        <<<grid, kGemmThreads, kGemmSmemBytes, stream>>>(p, transform, reduction);
  else
    conv_igemm_tf32x3_kernel<false, Transform, Reduction>
        <<<grid, kGemmThreads, kGemmSmemBytes, stream>>>(p, transform, reduction);
  return cudaGetLastError();
}

}  // namespace detail

// One convolution of a generated program: y = act(conv(x, w) + bias) on the wgmma kernel where
// the device's code holds it, else the mma.sync kernel. kProducts: 3xTF32 (ConvIgemmTf32x3, the
// fp32 track) or one TF32 product (ConvIgemmTf32, the tf32 and bf16 tracks: the wgmma kernel
// only; the mma.sync kernel makes three products either way, more accurate than asked). The
// weight's split copies (wgmma) are allocated at init: prepare_weights fills them once for a
// parameter; run(w != nullptr) splits per call instead (a weight computed by the program). One
// product makes and reads the big copy alone.
template <Tf32Products kProducts>
class ConvIgemm {
 public:
  ConvIgemm() = default;
  ConvIgemm(const ConvIgemm&) = delete;
  ConvIgemm& operator=(const ConvIgemm&) = delete;

  void set_engine(Tf32x3Engine engine) { requested_engine_ = engine; }  // before init
  // The wgmma kernel's tile width: 0 (the default) picks conv_igemm_wgmma_tile_n's; tests and the
  // bench force 64, 128 or (one product) 256. Before init.
  void set_tile_n(int tile_n) { requested_tile_n_ = tile_n; }
  // Whether the wgmma kernel may gather channels-last (where detail::conv_igemm_gather_channels
  // allows) — from a copy of x (padded with zero channels where that rounds them up to a multiple
  // of 4), or from x itself where it arrives so (the fast path); tests and the bench turn it off
  // (a channels-last x is then read through an NCDHW copy). Before init.
  void allow_channels_last(bool allowed) { allow_channels_last_ = allowed; }
  // Whether the wgmma kernel may load A by Hopper's im2col TMA (conv_igemm_im2col_tma.cuh) where
  // conv_igemm_tma_im2col_problem allows it (a channels-last gather of channels a multiple of 32,
  // one group, the map's limits) instead of its producer warpgroup's chunked cp.async gather; the
  // same K order, weights and results bit for bit. Tests and the bench turn it off to compare.
  // Before init.
  void allow_tma_im2col(bool allowed) { allow_tma_im2col_ = allowed; }
  // Whether the wgmma kernel may load A by tiled TMA boxes of an NCDHW x as it arrives
  // (conv_igemm_box_tma.cuh) where conv_igemm_box_tma_worth allows it and x needs no transform,
  // instead of gathering from a channels-last copy of x made per run. Tests and the bench turn it
  // off to compare. Before init.
  void allow_box_tma(bool allowed) { allow_box_tma_ = allowed; }
  // x arrives channels-last (NDHWC / NHWC / NLC, contiguous: a value the plan stores so) instead
  // of NCDHW. The wgmma kernel's channels-last gather then reads it as it is (or a copy padded
  // with zero channels); any other kernel or gather reads an NCDHW copy made per run. Before init.
  void set_input_channels_last(bool channels_last) { input_channels_last_ = channels_last; }
  // Each run copies x through a per-element transform of its (image, channel) plane into the
  // layout the gather reads (plane_transform.cuh: a training-mode BatchNorm's normalisation and
  // activation, the planner's fusion rule F10), the transform given to run; padding pads the
  // transformed input. x then arrives NCDHW. Before init.
  void set_input_transform(bool transforms) { transforms_input_ = transforms; }
  // x is a window of whole channels of a larger buffer (a cat's piece), its images `floats` apart
  // (0: dense). The transform's copy reads it so; needs set_input_transform(true). Before init.
  void set_input_image_floats(int64_t floats) { input_image_floats_ = floats; }
  // Outputs through `map` instead of into a dense y of the shape's size (a transposed
  // convolution's phase: conv_transpose_phases.cuh).
  void set_output_map(const ConvIgemmOutputMap& map) {
    output_map_ = map;
    has_output_map_ = true;
  }
  // One value per output position, its channels reduced (detail::ChannelReduction, whose type
  // init and whose value run are given): y is [batch, 1, output...]. One group of at most
  // kConvIgemmMaxReducedChannels channels (conv_igemm_channel_reduction_problem), no output map;
  // K is never split. Before init.
  void set_channel_reduction() { reduce_ = true; }
  bool uses_wgmma() const { return wgmma_; }
  bool uses_channels_last() const { return channels_last_; }
  bool uses_tma_im2col() const { return tma_im2col_; }
  bool uses_box_tma() const { return box_tma_; }
  // Whether each run first copies x: transposed into the layout the gather reads, padded with
  // zero channels for it (detail::conv_igemm_gather_channels), or transformed.
  bool copies_input() const {
    return transforms_input_ || channels_last_ != input_channels_last_ || pads_channels();
  }
  int tile_n() const { return wgmma_ ? tile_n_ : detail::kGemmBN; }

  // The shape (conv_igemm_shape_problem must accept it) and the epilogue; picks the kernel,
  // allows its shared memory (for the output transform's and channel reduction's types run will
  // be given, and the identity's: the opt-in is per kernel instantiation), plans split K over the
  // device's SMs and allocates what it needs.
  template <class OutputTransform = detail::PlaneIdentity,
            class Reduction = detail::NoChannelReduction>
  int init(const ConvIgemmShape& shape, MatmulEpilogue epilogue, std::string& error) {
    ready_ = false;
    prepared_w_ = nullptr;
    const std::string bad =
        reduce_ ? conv_igemm_channel_reduction_problem(shape) : conv_igemm_shape_problem(shape);
    if (!bad.empty()) {
      error = "ConvIgemm::init: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (const char* bad =
            detail::channel_reduction_setup_problem<Reduction>(reduce_, has_output_map_);
        *bad != '\0') {
      error = std::string("ConvIgemm::init: ") + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (transforms_input_ && input_channels_last_) {
      error = "ConvIgemm::init: a transformed x arrives NCDHW, not channels-last";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    shape_ = shape;
    if (input_image_floats_ != 0 &&
        (!transforms_input_ || input_image_floats_ < shape.in_channels * input_positions())) {
      error = "ConvIgemm::init: x's images " + std::to_string(input_image_floats_) +
              " floats apart need an input transform and at least one image between them";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    constexpr bool kOne = kProducts == Tf32Products::one;
    const int asked = requested_tile_n_;
    if (asked != 0 && asked != 64 && asked != 128 && !(kOne && asked == 256)) {
      error = std::string("ConvIgemm::init: the wgmma tile is 64 or 128 wide") +
              (kOne ? " or 256" : " (256 makes one product only)") + ", not " +
              std::to_string(asked);
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (reduce_ && asked != 0 &&
        (asked < shape.out_channels || asked > kConvIgemmMaxReducedChannels)) {
      error = "ConvIgemm::init: a channel reduction's tile is one of at most " +
              std::to_string(kConvIgemmMaxReducedChannels) + " holding every channel, not " +
              std::to_string(asked) + " wide for " + std::to_string(shape.out_channels);
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    epilogue_ = epilogue;
    STITCH_CHECK(choose_tf32x3_engine(requested_engine_, "ConvIgemm::init", wgmma_, error));
    tma_im2col_ = box_tma_ = false;
    if (!wgmma_) {
      STITCH_CHECK_CUDA(detail::allow_conv_igemm_tf32x3_smem<detail::PlaneIdentity>());
      STITCH_CHECK_CUDA((detail::allow_conv_igemm_tf32x3_smem<OutputTransform, Reduction>()));
      channels_last_ = false;
      STITCH_CHECK(reserve_input_copy(error));
      ready_ = true;
      return STITCH_OK;
    }
    box_tma_ = allow_box_tma_ && !input_channels_last_ && !transforms_input_ &&
               input_image_floats_ == 0 && conv_igemm_box_tma_worth(shape);
    channels_last_ =
        !box_tma_ && allow_channels_last_ && detail::conv_igemm_channels_last_eligible(shape);
    tma_im2col_ = channels_last_ && allow_tma_im2col_ && conv_igemm_tma_im2col_eligible(shape);
    const detail::ConvIgemmParams p = gather_params(nullptr, nullptr, nullptr, nullptr);
    int device = 0, sms = 0;
    STITCH_CHECK_CUDA(cudaGetDevice(&device));
    STITCH_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    // Boxes tile the output with positions past it: M counts the tiles' rows.
    const int64_t m = box_tma_ ? int64_t{p.tiles_m} * detail::kGemmBM : p.m;
    // A channel reduction needs a tile's sums whole: no K split (planned for no SMs).
    const detail::ConvIgemmWgmmaPlan planned = detail::plan_conv_igemm_wgmma(
        shape.groups, m, p.n, p.k, reduce_ ? 0 : sms, requested_tile_n_, kProducts);
    tile_n_ = planned.tile_n, plan_ = planned.plan;
    // The identity's kernel too: init-time timing runs it.
    STITCH_CHECK_CUDA(allow_wgmma_smem<detail::PlaneIdentity>(wgmma_identity_));
    STITCH_CHECK_CUDA((allow_wgmma_smem<OutputTransform, Reduction>(wgmma_transform_)));
    if (plan_.tiles * plan_.splits > INT32_MAX) {
      error = "ConvIgemm::init: too many output tiles for one launch";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    sms_ = sms;
    STITCH_CHECK(split_k_.init(plan_, error));
    STITCH_CHECK(split_w_.init(shape.groups, p.n, p.k, error, tile_n_, kProducts));
    STITCH_CHECK(reserve_input_copy(error));
    STITCH_CHECK(prepare_a_map(error));
    ready_ = true;
    return STITCH_OK;
  }

  // Splits a weight that stays put (a parameter) once; run then takes w = nullptr.
  int prepare_weights(const float* w, cudaStream_t stream, std::string& error) {
    if (!ready_ || w == nullptr) {
      error = !ready_ ? "ConvIgemm::prepare_weights before a successful init"
                      : "ConvIgemm::prepare_weights: null weight";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (wgmma_) STITCH_CHECK(split_weights(w, stream, error));
    prepared_w_ = w;
    return STITCH_OK;
  }

  // x, w, y as detail::launch_conv_igemm_tf32x3_mma_sync takes them; w == nullptr: the prepared
  // weight. `transform`: x's input transform where set_input_transform asked for one;
  // `output_transform`: applied to each result after the epilogue, then `reduction` where set
  // (init given their types).
  template <class Transform = detail::PlaneIdentity, class OutputTransform = detail::PlaneIdentity,
            class Reduction = detail::NoChannelReduction>
  int run(const float* x, const float* w, const float* bias, float* y, cudaStream_t stream,
          std::string& error, const Transform& transform = {},
          const OutputTransform& output_transform = {}, const Reduction& reduction = {}) const {
    std::string bad;
    if (!ready_)
      bad = "run before a successful init";
    else if (reduce_ != detail::kReducesChannels<Reduction>)
      bad = "the channel reduction is not the one init planned";
    else if (x == nullptr || (w == nullptr && prepared_w_ == nullptr) || y == nullptr)
      bad = "null tensor pointer";
    else if (epilogue_has_bias(epilogue_) && bias == nullptr)
      bad = "the epilogue needs a bias";
    else if (!std::is_same_v<Transform, detail::PlaneIdentity> && !transforms_input_)
      bad = "a transform without set_input_transform(true) before init";
    if (!bad.empty()) {
      error = "ConvIgemm::run: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (copies_input()) {
      float* copy = static_cast<float*>(x_copy_.at(0));
      STITCH_CHECK_CUDA(copy_input(x, copy, stream, transform));
      x = copy;
    }
    return run_gathered(x, w, bias, y, stream, error, output_transform, reduction);
  }

  // x through the transform into NCDHW in the run's copy buffer: cuDNN's input where it is timed
  // against this kernel (conv_engine_timing.cuh) and runs instead. After init with
  // set_input_transform(true); `transformed` is valid until the next run.
  template <class Transform>
  int transformed_input(const float* x, cudaStream_t stream, const Transform& transform,
                        const float*& transformed, std::string& error) const {
    if (!ready_ || !transforms_input_ || x == nullptr) {
      error = "ConvIgemm::transformed_input: " +
              std::string(x == nullptr ? "null x" : "no set_input_transform(true) and init");
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    float* copy = static_cast<float*>(x_copy_.at(0));
    STITCH_CHECK_CUDA(detail::launch_transform_planes(x, input_image(), copy, shape_.batch,
                                                      shape_.in_channels, input_positions(), stream,
                                                      transform));
    transformed = copy;
    return STITCH_OK;
  }

  std::string describe() const {
    if (!ready_) return "not initialised";
    const bool one = kProducts == Tf32Products::one && wgmma_;
    std::string out = std::string(one ? "TF32" : "3xTF32") + " implicit GEMM, one " +
                      (wgmma_ ? "wgmma + TMA (sm_90a)" : "mma.sync") + " kernel, 128x" +
                      std::to_string(tile_n()) + " tiles";
    if (pads_channels())
      out += ", gathered from a channels-last copy of x padded to " +
             std::to_string(detail::conv_igemm_gather_channels(shape_)) + " channels";
    else if (channels_last_)
      out += input_channels_last_ ? ", gathered from the channels-last x"
                                  : ", gathered from a channels-last copy of x";
    else if (input_channels_last_)
      out += ", gathered from an NCDHW copy of the channels-last x";
    if (tma_im2col_) out += ", by im2col TMA";
    if (box_tma_) {
      const detail::ConvBoxTile box = detail::conv_box_tile(shape_);
      out += ", read from x by TMA boxes of " + std::to_string(box.w) + "x" +
             std::to_string(box.h) + " positions";
    }
    if (transforms_input_) out += ", x transformed as it is copied";
    if (reduce_) out += ", channels reduced";
    if (plan_.splits > 1)
      out += ", K split " + std::to_string(plan_.splits) + " ways (" +
             std::to_string(plan_.split_k) + " each)";
    return out;
  }
  int splits() const { return plan_.splits; }
  // The floats a buffer holding x as it arrives spans (its images input_image_floats apart).
  int64_t input_floats() const {
    return (shape_.batch - 1) * input_image() + shape_.in_channels * input_positions();
  }

 private:
  // The wgmma kernel of init's tile width and gather for an output transform's and channel
  // reduction's types.
  template <class OutputTransform, class Reduction>
  using WgmmaKernel = void (*)(detail::ConvIgemmParams, detail::GemmTf32x3Args, detail::WgmmaMaps,
                               CUtensorMap, OutputTransform, Reduction);
  template <int kBN, class OutputTransform, class Reduction>
  WgmmaKernel<OutputTransform, Reduction> wgmma_kernel_of_width() const {
    if (channels_last_)
      return detail::conv_igemm_tf32x3_wgmma_kernel<true, kBN, OutputTransform, kProducts,
                                                    Reduction>;
    return detail::conv_igemm_tf32x3_wgmma_kernel<false, kBN, OutputTransform, kProducts,
                                                  Reduction>;
  }
  template <class OutputTransform, class Reduction>
  WgmmaKernel<OutputTransform, Reduction> wgmma_kernel() const {
    // A channel reduction's tile holds every channel: never the 256-wide one (init).
    if constexpr (kProducts == Tf32Products::one && !detail::kReducesChannels<Reduction>)
      if (tile_n_ == 256) return wgmma_kernel_of_width<256, OutputTransform, Reduction>();
    if (tile_n_ == 64) return wgmma_kernel_of_width<64, OutputTransform, Reduction>();
    return wgmma_kernel_of_width<128, OutputTransform, Reduction>();
  }

  // The ring's, and the boxes' staging slots past it where A comes by boxes.
  size_t wgmma_smem_bytes() const {
    const size_t ring = tile_n_ == 64    ? detail::WgmmaTile<64>::kSmemBytes
                        : tile_n_ == 128 ? detail::WgmmaTile<128>::kSmemBytes
                                         : detail::WgmmaTile<256>::kSmemBytes;
    return ring + (box_tma_ ? size_t{detail::kConvBoxStagingSlots} * detail::kConvBoxStagingBytes
                            : 0);
  }

  // Lets that kernel use its shared memory (the opt-in is per kernel and device) and keeps its
  // address in `kept` for the launches. nvcc 13 gives each file its own host stub of a __global__
  // template (-static-global-template-stub), so the kernel's address differs between files that
  // include this header; the linker keeps one file's copy of each inline function, init's and
  // run's possibly from different files. Launching the address init allowed, not one run takes
  // itself, keeps the two the same kernel (else the launch lacks the opt-in:
  // cudaErrorInvalidValue).
  template <class OutputTransform, class Reduction = detail::NoChannelReduction>
  cudaError_t allow_wgmma_smem(void (*&kept)()) {
    const WgmmaKernel<OutputTransform, Reduction> kernel =
        wgmma_kernel<OutputTransform, Reduction>();
    kept = reinterpret_cast<void (*)()>(kernel);
    const size_t smem = wgmma_smem_bytes();
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(smem));
  }

  // x in the layout the gather reads (from the caller, or copied).
  template <class OutputTransform, class Reduction>
  int run_gathered(const float* x, const float* w, const float* bias, float* y, cudaStream_t stream,
                   std::string& error, const OutputTransform& output_transform,
                   const Reduction& reduction) const {
    const bool given_w = w != nullptr;
    if (w == nullptr) w = prepared_w_;
    const ConvIgemmOutputMap* map = has_output_map_ ? &output_map_ : nullptr;
    if (!wgmma_) {
      STITCH_CHECK_CUDA(detail::launch_conv_igemm_tf32x3_mma_sync(
          x, w, bias, y, shape_, epilogue_, stream, map, output_transform, reduction));
      return STITCH_OK;
    }
    if (given_w) STITCH_CHECK(split_weights(w, stream, error));
    detail::ConvIgemmParams p = gather_params(x, w, bias, y);
    if (map != nullptr) {
      detail::conv_igemm_output_map(p, *map);
      p.pair_stores = detail::conv_igemm_pair_stores(p);
    }
    detail::GemmTf32x3Args order;  // the tile order, split plan and chunking (no matrices)
    order.tiles_m = plan_.tiles_m, order.tiles_n = plan_.tiles_n;
    order.splits = plan_.splits, order.split_k = plan_.split_k;
    order.partials = split_k_.partials(), order.tickets = split_k_.tickets();
    order.units = static_cast<int>(plan_.tiles * plan_.splits);  // init checked it fits
    const auto blocks = static_cast<unsigned>(std::min(order.units, sms_));
    // A's map: the im2col TMA's of the copy, encoded at init; of x itself (the im2col TMA's or the
    // boxes'), encoded now (its address is this run's; a graph captured from this launch keeps
    // this map with the pointers it was captured for).
    CUtensorMap x_map{};
    const CUtensorMap* a_map = &im2col_map_;
    if (tma_im2col_ && !copies_input()) {
      STITCH_CHECK(
          detail::encode_conv_im2col_map(encode_im2col_, shape_, copy_channels(), x, x_map, error));
      a_map = &x_map;
    } else if (box_tma_) {
      STITCH_CHECK(detail::encode_conv_box_map(encode_tiled_, shape_, x, x_map, error));
      a_map = &x_map;
    }
    // An error left by an earlier call would read as this launch's.
    STITCH_CHECK_CUDA(cudaPeekAtLastError());
    return launch_wgmma(p, order, blocks, stream, *a_map, output_transform, reduction, error);
  }

  // x into `copy`: transposed where the gather reads the other layout (a transform only from
  // NCDHW: init), padded with zero channels where it reads more (from either layout), else
  // through the transform alone.
  template <class Transform>
  cudaError_t copy_input(const float* x, float* copy, cudaStream_t stream,
                         const Transform& transform) const {
    const int64_t positions = input_positions();
    if (channels_last_ && input_channels_last_)  // only to pad
      return detail::launch_pad_channels(x, copy, shape_.batch * positions, shape_.in_channels,
                                         copy_channels(), stream);
    if (channels_last_)
      return detail::launch_channels_last(x, copy, shape_.batch, shape_.in_channels, positions,
                                          stream, transform, input_image(), copy_channels());
    if (input_channels_last_)  // back to NCDHW
      return detail::launch_channels_last(x, copy, shape_.batch, positions, shape_.in_channels,
                                          stream, transform, input_image());
    return detail::launch_transform_planes(x, input_image(), copy, shape_.batch, shape_.in_channels,
                                           positions, stream, transform);
  }

  // The kernel init allowed (allow_wgmma_smem) for OutputTransform and Reduction, which are
  // init's or the identity and none.
  template <class OutputTransform, class Reduction>
  int launch_wgmma(const detail::ConvIgemmParams& p, const detail::GemmTf32x3Args& order,
                   unsigned blocks, cudaStream_t stream, const CUtensorMap& a_map,
                   const OutputTransform& output_transform, const Reduction& reduction,
                   std::string& error) const {
    constexpr bool kIdentity = std::is_same_v<OutputTransform, detail::PlaneIdentity> &&
                               !detail::kReducesChannels<Reduction>;
    const auto kernel = reinterpret_cast<WgmmaKernel<OutputTransform, Reduction>>(
        kIdentity ? wgmma_identity_ : wgmma_transform_);
    const size_t smem = wgmma_smem_bytes();
    kernel<<<blocks, detail::kWgmmaThreads, smem, stream>>>(p, order, split_w_.maps(), a_map,
                                                            output_transform, reduction);
    const cudaError_t status = cudaGetLastError();
    if (status == cudaSuccess) return STITCH_OK;
    error = std::string("ConvIgemm: the wgmma kernel's launch: ") + cudaGetErrorName(status) +
            " (" + describe() + "; " +
            detail::launch_request(reinterpret_cast<const void*>(kernel), blocks,
                                   detail::kWgmmaThreads, smem) +
            ")";
    return detail::status_of(status);
  }

  int64_t input_positions() const {
    int64_t positions = 1;
    for (int i = 0; i < shape_.spatial; ++i)
      positions *= shape_.input[i];
    return positions;
  }
  // The floats between x's images as it arrives.
  int64_t input_image() const {
    return input_image_floats_ != 0 ? input_image_floats_ : shape_.in_channels * input_positions();
  }

  // Whether the gather reads zero channels past x's (through the copy).
  bool pads_channels() const { return channels_last_ && detail::conv_igemm_pads_channels(shape_); }

  // The kernel's parameters for the gather init chose.
  detail::ConvIgemmParams gather_params(const float* x, const float* w, const float* bias,
                                        float* y) const {
    detail::ConvIgemmParams p = detail::conv_igemm_params(x, w, bias, y, shape_, epilogue_);
    if (channels_last_) detail::conv_igemm_channels_last(p, shape_);
    if (box_tma_) detail::conv_igemm_box_params(p, shape_);
    if (reduce_) detail::conv_igemm_reduced_output(p);
    p.im2col_tma = tma_im2col_;
    return p;
  }

  // The channels per position (every group's) of the per-run copy of x: the gather's, padding
  // channels included, for the channels-last gather; x's for an NCDHW one.
  int64_t copy_channels() const {
    return channels_last_ ? detail::conv_igemm_gather_channels(shape_) * shape_.groups
                          : shape_.in_channels;
  }

  // The per-run copy of x (copies_input).
  int reserve_input_copy(std::string& error) {
    if (!copies_input()) return STITCH_OK;
    const auto floats = static_cast<size_t>(shape_.batch * copy_channels() * input_positions());
    return x_copy_.reserve(floats * sizeof(float), error);
  }

  // The encoder of A's map (the boxes' or the im2col TMA's), and the im2col map where the kernel
  // reads the run's copy of x (a stable address: encoded once, here); a map of x itself is
  // encoded per run (run_gathered). After reserve_input_copy.
  int prepare_a_map(std::string& error) {
    encode_im2col_ = nullptr;
    encode_tiled_ = nullptr;
    if (box_tma_) {
      encode_tiled_ = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(
          detail::tensor_map_encoder("cuTensorMapEncodeTiled", error));
      if (encode_tiled_ != nullptr) return STITCH_OK;
      error = "ConvIgemm::init: " + error;
      return STITCH_ERROR_CUDA;
    }
    if (!tma_im2col_) return STITCH_OK;
    encode_im2col_ = reinterpret_cast<PFN_cuTensorMapEncodeIm2col_v12000>(
        detail::tensor_map_encoder("cuTensorMapEncodeIm2col", error));
    if (encode_im2col_ == nullptr) {
      error = "ConvIgemm::init: " + error;
      return STITCH_ERROR_CUDA;
    }
    if (!copies_input()) return STITCH_OK;
    return detail::encode_conv_im2col_map(encode_im2col_, shape_, copy_channels(),
                                          static_cast<const float*>(x_copy_.at(0)), im2col_map_,
                                          error);
  }

  // The weight [groups][n][k] (rows of K contiguous floats: a transposed B per group), K
  // reordered to (tap, channel) for the channels-last gather and the boxes, zero columns for
  // their padding channels.
  int split_weights(const float* w, cudaStream_t stream, std::string& error) const {
    const detail::ConvIgemmParams dense =
        detail::conv_igemm_params(nullptr, w, nullptr, nullptr, shape_, epilogue_);
    if (!channels_last_ && !box_tma_)
      return split_w_.split(w, dense.k, int64_t{dense.n} * dense.k, true, stream, error);
    return split_w_.split(w, dense.k, int64_t{dense.n} * dense.k, true, stream, error,
                          gather_params(nullptr, w, nullptr, nullptr).channels, dense.channels);
  }

  ConvIgemmShape shape_;
  MatmulEpilogue epilogue_ = MatmulEpilogue::none;
  detail::GemmTf32x3Plan plan_;  // wgmma: tiles and split K (groups are the batch)
  SplitKScratch split_k_;
  WgmmaSplitB split_w_;
  Arena x_copy_;              // x transposed into the gather's layout or transformed (copies_input)
  CUtensorMap im2col_map_{};  // the im2col TMA's map of x_copy_ (prepare_a_map)
  PFN_cuTensorMapEncodeIm2col_v12000 encode_im2col_ = nullptr;
  PFN_cuTensorMapEncodeTiled_v12000 encode_tiled_ = nullptr;  // the boxes' (box_tma_)
  const float* prepared_w_ = nullptr;
  Tf32x3Engine requested_engine_ = Tf32x3Engine::automatic;
  int requested_tile_n_ = 0;
  int tile_n_ = detail::kGemmBN;  // the wgmma kernel's
  int sms_ = 1;                   // the persistent wgmma kernel's blocks
  // The wgmma kernels init allowed their shared memory, by address (allow_wgmma_smem): the
  // identity's and init's output transform's and channel reduction's.
  void (*wgmma_identity_)() = nullptr;
  void (*wgmma_transform_)() = nullptr;
  bool allow_channels_last_ = true;
  bool allow_tma_im2col_ = true;
  bool allow_box_tma_ = true;
  bool input_channels_last_ = false;
  bool transforms_input_ = false;
  int64_t input_image_floats_ = 0;  // 0: x dense
  ConvIgemmOutputMap output_map_;
  bool has_output_map_ = false;
  bool reduce_ = false;  // set_channel_reduction
  bool wgmma_ = false;
  bool channels_last_ = false;
  bool tma_im2col_ = false;  // A by the im2col TMA (channels_last_ too)
  bool box_tma_ = false;     // A by TMA boxes of the NCDHW x (conv_igemm_box_tma.cuh)
  bool ready_ = false;
};

using ConvIgemmTf32x3 = ConvIgemm<Tf32Products::three>;
using ConvIgemmTf32 = ConvIgemm<Tf32Products::one>;

}  // namespace stitch::kernels
