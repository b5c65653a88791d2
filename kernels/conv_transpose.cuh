// A transposed convolution, y = act(conv_transpose(x, w) + bias), as the forward convolutions of
// its output phases (conv_transpose_phases.cuh) — none of the zero products a zero-inserted input
// would bring — each on a forward engine writing through its output map into the strided subset
// of y it owns; outputs no tap reaches get act(bias) from a fill kernel (then the output transform
// where run is given one, as the phases apply it). The phases run one after
// another on the caller's stream (capturable: kernel launches only). ConvTransposeByPhases<Forward>
// over either engine:
//   ConvTransposeIgemmTf32x3  the implicit GEMM (conv_igemm_tf32x3.cuh): 3xTF32 tensor cores,
//                             FP32-accurate, each phase's weight split once it is prepared;
//   ConvTransposeIgemmTf32    the same in one TF32 product (the tf32 and bf16 tracks);
//   ConvTransposeDirect       the direct FP32 kernel (conv_direct.cuh): exact FP32, for few
//                             products per output (every phase's within its K);
//   ConvTransposeDirectTf32   the direct kernel in one TF32 product (the tf32 and bf16 tracks).
//
//   ConvTransposeIgemmTf32x3 conv;
//   conv.init(shape, epilogue, error);      // the phases and their convolutions, buffers
//   conv.prepare_weights(w, stream, error);  // a parameter weight: each phase's w' once
//   conv.run(x, nullptr, bias, y, stream, error);
//
// w is PyTorch's [in_channels][out_channels / groups][kernel...]; x and y NCDHW contiguous.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "conv_direct.cuh"
#include "conv_igemm_tf32x3.cuh"
#include "conv_transpose_phases.cuh"
#include "gemm_tf32x3_common.cuh"
#include "matmul.cuh"
#include "runtime.cuh"

namespace stitch::kernels {

namespace detail {

// Element i of a phase's weight w' [out_channels][in_channels / groups][its taps...]: w at
// conv_transpose_weight_index. Pure: the CPU tests run it too.
__host__ __device__ inline float conv_transpose_phase_weight(const float* w,
                                                             const ConvTransposeShape& s3,
                                                             const ConvTransposePhase& phase,
                                                             int64_t i) {
  const int64_t taps = phase.axis[0].taps * phase.axis[1].taps * phase.axis[2].taps;
  const int64_t in_per_group = s3.in_channels / s3.groups;
  const int64_t tap = i % taps, channel_pair = i / taps;
  const int64_t j[3] = {tap / (phase.axis[1].taps * phase.axis[2].taps),
                        tap / phase.axis[2].taps % phase.axis[1].taps, tap % phase.axis[2].taps};
  return w[conv_transpose_weight_index(s3, phase, channel_pair / in_per_group,
                                       channel_pair % in_per_group, j)];
}

// Element i of a phase no tap reaches, transform(plane, act(bias)) (0 without a bias; plane =
// image · channels + channel), written where its output map puts it in y. Pure: the CPU tests
// run it too.
template <class Transform = PlaneIdentity>
__host__ __device__ inline void conv_transpose_fill(float* y, const float* bias,
                                                    MatmulEpilogue epilogue,
                                                    const ConvIgemmOutputMap& map, int64_t channels,
                                                    const ConvTransposePhase& phase, int64_t i,
                                                    const Transform& transform = {}) {
  const int64_t q1 = phase.axis[1].outputs, q2 = phase.axis[2].outputs;
  const int64_t plane = phase.axis[0].outputs * q1 * q2;
  const int64_t position = i % plane, channel = i / plane % channels, image = i / plane / channels;
  const int64_t at = image * map.image_floats + channel * map.channel_floats + map.origin +
                     position / (q1 * q2) * map.step[0] + position / q2 % q1 * map.step[1] +
                     position % q2 * map.step[2];
  y[at] = transform(image * channels + channel,
                    gemm_activation(epilogue_has_bias(epilogue) ? bias[channel] : 0.0f, epilogue));
}

// out[i] = conv_transpose_phase_weight(w, ..., i) over the phase's count weights.
template <int kUnused = 0>
__global__ void conv_transpose_phase_weight_kernel(const float* w, float* out,
                                                   ConvTransposeShape s3, ConvTransposePhase phase,
                                                   int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    out[i] = conv_transpose_phase_weight(w, s3, phase, i);
}

// conv_transpose_fill over a phase's count outputs.
template <class Transform>
__global__ void conv_transpose_fill_kernel(float* y, const float* bias, MatmulEpilogue epilogue,
                                           ConvIgemmOutputMap map, int64_t channels,
                                           ConvTransposePhase phase, int64_t count,
                                           const Transform transform) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count;
       i += int64_t{gridDim.x} * blockDim.x)
    conv_transpose_fill(y, bias, epilogue, map, channels, phase, i, transform);
}

}  // namespace detail

template <class Forward>
class ConvTransposeByPhases {
  // The implicit GEMM keeps each phase's weight split (prepare_weights); the direct kernel reads
  // the gathered weight on every run.
  static constexpr bool kForwardPreparesWeights =
      std::is_same_v<Forward, ConvIgemmTf32x3> || std::is_same_v<Forward, ConvIgemmTf32>;

 public:
  ConvTransposeByPhases() = default;
  ConvTransposeByPhases(const ConvTransposeByPhases&) = delete;
  ConvTransposeByPhases& operator=(const ConvTransposeByPhases&) = delete;

  // Tests force the engine (Tf32x3Engine) of every phase's implicit GEMM (the implicit GEMM's
  // phases only). Before init.
  void set_engine(Tf32x3Engine engine) { engine_ = engine; }

  // OutputTransform: the type of the output transform run will be given (its phases' kernels'
  // shared-memory opt-in is per instantiation).
  template <class OutputTransform = detail::PlaneIdentity>
  int init(const ConvTransposeShape& shape, MatmulEpilogue epilogue, std::string& error) {
    ready_ = prepared_ = false;
    phases_.clear();
    if (const std::string bad = conv_transpose_shape_problem(shape); !bad.empty()) {
      error = "ConvTransposeByPhases::init: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    shape_ = shape;
    epilogue_ = epilogue;
    const ConvTransposeShape s3 = detail::conv_transpose_3d(shape);
    const int64_t in_per_group = s3.in_channels / s3.groups;
    ArenaLayout layout;  // the phases' weights, w's size in all (each tap is in one phase)
    for (const ConvTransposePhase& phase : conv_transpose_phases(shape)) {
      Phase part;
      part.phase = phase;
      part.map = conv_transpose_output_map(shape, phase);
      if (phase.contributes) {
        part.conv = std::make_unique<Forward>();
        if constexpr (kForwardPreparesWeights) part.conv->set_engine(engine_);
        part.conv->set_output_map(part.map);
        STITCH_CHECK(part.conv->template init<OutputTransform>(phase.forward, epilogue, error));
        part.weight_count = s3.out_channels * in_per_group * phase.axis[0].taps *
                            phase.axis[1].taps * phase.axis[2].taps;
        part.weight_offset = layout.take(static_cast<size_t>(part.weight_count) * sizeof(float));
      }
      phases_.push_back(std::move(part));
    }
    STITCH_CHECK(weights_.reserve(layout.total(), error));
    ready_ = true;
    return STITCH_OK;
  }

  // A weight that stays put (a parameter): every phase's w' gathered (and split) once; run then
  // takes w = nullptr.
  int prepare_weights(const float* w, cudaStream_t stream, std::string& error) {
    if (!ready_ || w == nullptr) {
      error = !ready_ ? "ConvTransposeByPhases::prepare_weights before a successful init"
                      : "ConvTransposeByPhases::prepare_weights: null weight";
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    STITCH_CHECK(gather_weights(w, stream, error));
    if constexpr (kForwardPreparesWeights)
      for (Phase& part : phases_)
        if (part.conv) STITCH_CHECK(part.conv->prepare_weights(phase_weight(part), stream, error));
    prepared_ = true;
    return STITCH_OK;
  }

  // w == nullptr: the prepared weight; otherwise the phases' weights are gathered from w first.
  // `output_transform` applied to each result after the epilogue, the filled ones too (init given
  // its type); the signature is the forward kernels', with no input transform.
  template <class InputTransform = detail::PlaneIdentity,
            class OutputTransform = detail::PlaneIdentity>
  int run(const float* x, const float* w, const float* bias, float* y, cudaStream_t stream,
          std::string& error, const InputTransform& = {},
          const OutputTransform& output_transform = {}) const {
    static_assert(std::is_same_v<InputTransform, detail::PlaneIdentity>,
                  "a transposed convolution takes no input transform");
    std::string bad;
    if (!ready_)
      bad = "run before a successful init";
    else if (x == nullptr || y == nullptr)
      bad = "null tensor pointer";
    else if (w == nullptr && !prepared_)
      bad = "no weight, and none prepared";
    else if (epilogue_has_bias(epilogue_) && bias == nullptr)
      bad = "the epilogue needs a bias";
    if (!bad.empty()) {
      error = "ConvTransposeByPhases::run: " + bad;
      return STITCH_ERROR_INVALID_ARGUMENT;
    }
    if (w != nullptr) STITCH_CHECK(gather_weights(w, stream, error));
    for (const Phase& part : phases_) {
      if (part.conv) {
        // The implicit GEMM runs on its prepared split weight unless given one to split.
        const bool own_weight = kForwardPreparesWeights && w == nullptr;
        STITCH_CHECK(part.conv->run(x, own_weight ? nullptr : phase_weight(part), bias, y, stream,
                                    error, detail::PlaneIdentity{}, output_transform));
        continue;
      }
      const int64_t count = shape_.batch * shape_.out_channels * part.phase.axis[0].outputs *
                            part.phase.axis[1].outputs * part.phase.axis[2].outputs;
      int64_t blocks = 0;
      STITCH_CHECK_CUDA(grid_stride_blocks(count, kBlock, blocks));
      detail::conv_transpose_fill_kernel<OutputTransform>
          <<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(y, bias, epilogue_, part.map,
                                                                 shape_.out_channels, part.phase,
                                                                 count, output_transform);
      STITCH_CHECK_CUDA(cudaGetLastError());
    }
    return STITCH_OK;
  }

  std::string describe() const {
    if (!ready_) return "not initialised";
    int contributing = 0;
    std::string engine;
    for (const Phase& part : phases_)
      if (part.conv) ++contributing, engine = part.conv->describe();
    return "transposed convolution as " + std::to_string(contributing) + " phase convolutions (" +
           engine + ")" +
           (contributing < static_cast<int>(phases_.size())
                ? ", " + std::to_string(phases_.size() - contributing) + " filled with the bias"
                : "");
  }

 private:
  static constexpr int kBlock = 256;  // the weight gather's and the fill's
  struct Phase {
    ConvTransposePhase phase;
    ConvIgemmOutputMap map;
    std::unique_ptr<Forward> conv;  // null: no tap reaches these outputs
    int64_t weight_count = 0;
    size_t weight_offset = 0;  // in weights_
  };

  float* phase_weight(const Phase& part) const {
    return static_cast<float*>(weights_.at(part.weight_offset));
  }

  int gather_weights(const float* w, cudaStream_t stream, std::string& error) const {
    const ConvTransposeShape s3 = detail::conv_transpose_3d(shape_);
    for (const Phase& part : phases_) {
      if (!part.conv) continue;
      int64_t blocks = 0;
      STITCH_CHECK_CUDA(grid_stride_blocks(part.weight_count, kBlock, blocks));
      detail::conv_transpose_phase_weight_kernel<>
          <<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(w, phase_weight(part), s3,
                                                                 part.phase, part.weight_count);
      STITCH_CHECK_CUDA(cudaGetLastError());
    }
    return STITCH_OK;
  }

  ConvTransposeShape shape_;
  MatmulEpilogue epilogue_ = MatmulEpilogue::none;
  Tf32x3Engine engine_ = Tf32x3Engine::automatic;
  std::vector<Phase> phases_;
  Arena weights_;  // every contributing phase's w' [out_channels][in_channels / groups][taps...]
  bool prepared_ = false;
  bool ready_ = false;
};

using ConvTransposeIgemmTf32x3 = ConvTransposeByPhases<ConvIgemmTf32x3>;
using ConvTransposeIgemmTf32 = ConvTransposeByPhases<ConvIgemmTf32>;
using ConvTransposeDirect = ConvTransposeByPhases<ConvDirect>;
using ConvTransposeDirectTf32 = ConvTransposeByPhases<ConvDirectTf32>;

}  // namespace stitch::kernels
