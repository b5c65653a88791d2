// A hand-written program on kernels/host_program.cuh, as small as the skeleton allows: one param
// `scale` [4], one input x [2, 4], one output y [2, 4] = x * (2 * scale) + 1. The doubled scale is
// an at-init subtask (into the persistent block), the forward pass one elementwise launch, and one
// reduction extent sizes the reduction scratch. Used by host_program_test.cu (gpu: init, forward,
// errors, graph replay) and tiny_program.cu (cpu: compiles and links without cuBLASLt).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "kernels/elementwise.cuh"
#include "kernels/host_program.cuh"

namespace stitch::kernels::tiny {

struct DoubleScale {
  __device__ void operator()(const float (&x)[1], float (&y)[1]) const { y[0] = 2.0f * x[0]; }
};
struct ScaleShift {
  __device__ void operator()(const float (&x)[2], float (&y)[1]) const {
    y[0] = x[0] * x[1] + 1.0f;
  }
};

// How often run_subtasks recorded work: once per capture, once per direct (uncaptured) run.
inline int recorded_forwards = 0;

template <bool kGraphs>
struct TinyProgram {
  static constexpr std::array<TensorSpec, 1> kParams = {{{STITCH_FLOAT32, 1, {4}}}};
  static constexpr std::array<TensorSpec, 1> kInputs = {{{STITCH_FLOAT32, 2, {2, 4}}}};
  static constexpr std::array<TensorSpec, 1> kOutputs = {{{STITCH_FLOAT32, 2, {2, 4}}}};
  static constexpr std::array<ParamSlot, 1> kParamSlots = {{{256, 16}}};  // after the init result
  static constexpr std::array<ReduceExtent, 1> kReductions = {{{1, 1 << 20, 1}}};
  static constexpr ProgramLayout kLayout = {
      512,  // persistent_bytes
      256,  // arena_bytes
      0,    // lt_workspace_bytes
      0,    // lt_workspace_offset
      kGraphs,
  };
  static constexpr bool kUsesMatmul = false;
  struct Gemms {};
  using State = ProgramState<TinyProgram>;

  static int run_init_subtasks(State* s, cudaStream_t stream) {
    std::string& error = s->error;
    const int64_t shape[1] = {4};
    const TensorOperand ins[1] = {{s->persistent + 256, STITCH_FLOAT32, 0, {1}}};
    const OutOperand outs[1] = {{s->persistent, STITCH_FLOAT32, 0, {1}}};
    STITCH_CHECK_CUDA(launch_elementwise(DoubleScale{}, ins, outs, 1, shape, stream));
    return STITCH_OK;
  }

  static int run_subtasks(State* s, const stitch_tensor* inputs, stitch_tensor* outputs,
                          cudaStream_t stream) {
    std::string& error = s->error;
    ++recorded_forwards;
    const int64_t shape[2] = {2, 4};
    const TensorOperand ins[2] = {{inputs[0].data, STITCH_FLOAT32, 0, {4, 1}},
                                  {s->persistent, STITCH_FLOAT32, 0, {0, 1}}};
    const OutOperand outs[1] = {{outputs[0].data, STITCH_FLOAT32, 0, {4, 1}}};
    STITCH_CHECK_CUDA(launch_elementwise(ScaleShift{}, ins, outs, 2, shape, stream));
    return STITCH_OK;
  }
};

}  // namespace stitch::kernels::tiny
