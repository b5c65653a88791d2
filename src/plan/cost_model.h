// The cost model: per subtask, floating-point work and DRAM traffic, the roofline floor
// floor_us = max(flops / compute peak, bytes / bandwidth), and what bounds it. The compute peak is
// that of the arithmetic the chosen kernel does: FP32 without tensor cores, or a third of the TF32
// tensor-core peak for a split-precision 3xTF32 GEMM (three products per FP32-accurate one), so a
// measured kernel never runs below its own floor. A floor, not a
// prediction: it is what a perfect kernel would take, used to rank hotspots and to judge how far a
// measured kernel is from its limit.
#pragma once

#include "plan/plan.h"

namespace stitch::plan {

// Below this a subtask's floor is under a kernel launch's own cost: it is latency bound.
inline constexpr double kLatencyFloorUs = 2.0;

// A recurrent layer's floor is at least its serial steps times this: one step of one layer and
// direction (a small GEMM plus the gate math, dependent on the step before). On the H200
// (2026-12-02, tests/kernels/rnn_bench.cu, graphed, the level-3 shapes) the fastest algorithm took
// 1.9 µs a step (Elman, hidden 256), 2.3 (GRU), 2.6 (LSTM) and 3.2 (bidirectional GRU, per
// direction step): 2 µs is the floor under them.
inline constexpr double kRecurrentStepUs = 2.0;
// Serial steps: seq_len x layers x directions (cuDNN may overlap the directions; counted apart).
inline double recurrent_steps(const RecurrentSpec& spec) {
  return static_cast<double>(spec.seq_len * spec.layers * (spec.bidirectional ? 2 : 1));
}

struct SubtaskCost {
  double flops = 0, bytes = 0, floor_us = 0;
  Bound bound = Bound::memory;
};

// flops: a GEMM 2*batch*m*n*k plus one per output element for the bias and each epilogue op; a
// convolution 2*N*K*(C/groups)*prod(kernel)*prod(output) (transposed: of the forward convolution
// it inverts) plus one per output element per epilogue op; attention 2*(head_dim + value_dim) per
// visited (query, key) pair (a causal mask skips later keys) plus 4 (softmax) and one per scores
// body step; other
// kernels one per element per body step, plus per element 1 for a reduction (3 for mean_var), 4 for
// softmax/log_softmax/rms_norm, 8 for layer_norm. bytes: every Access read once (its footprint:
// broadcast dims count once) plus every stored value written once, in the base's dtype; a GEMM
// epilogue pass also reads back the GEMM result.
SubtaskCost estimate_subtask_cost(const ir::Graph& graph, const Subtask& subtask,
                                  const GpuPeaks& peaks);

// Strict FP32 rates: flops / fp32 peak against bytes / bandwidth.
double roofline_floor_us(double flops, double bytes, const GpuPeaks& peaks);

// The FP32-accurate rate of split-precision 3xTF32 (TFLOP/s): three TF32 tensor-core products per
// FP32 product; 0 without tensor cores.
inline double tf32x3_tflops(const GpuPeaks& peaks) { return peaks.tf32_tflops / 3; }

// Dense BF16 tensor cores (TFLOP/s): twice dense TF32 on A100, H100/H200 and B200 (datasheets).
inline double bf16_tflops(const GpuPeaks& peaks) { return 2 * peaks.tf32_tflops; }

// The compute peak behind a subtask's floor (TFLOP/s): tf32x3_tflops for a 3xTF32 GEMM (tunable
// split_tf32x3 = 1) or convolution (kernel igemm_tf32x3_conv), the TF32 or BF16 peak for a GEMM or convolution with that tensor_math (a
// convolution's is TF32 on the bf16 track too), fp32_tflops otherwise (strict-FP32 cuDNN).
double compute_peak_tflops(const Subtask& subtask, const GpuPeaks& peaks);

}  // namespace stitch::plan
