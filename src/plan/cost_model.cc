// The roofline cost model (cost_model.h).
#include "plan/cost_model.h"

#include <algorithm>
#include <set>

#include "plan/access.h"
#include "plan/kernel_choice.h"
#include "plan/passes.h"
#include "plan/recurrent.h"
#include "plan/subtasks.h"
#include "util/gpu_peaks.h"

namespace stitch::plan {

namespace {

double body_steps(const std::optional<Body>& body) {
  return body ? static_cast<double>(body->steps.size()) : 0.0;
}

// One flop per window element of every output (adaptive windows: at most ceil(in / out) per dim),
// plus the epilogue's steps per output.
double pool_flops(const PoolSpec& s) {
  double outputs = 1, window = 1;
  for (size_t d = 0; d < s.input.shape.size(); ++d) {
    if (d + s.out.size() < s.input.shape.size()) {
      outputs *= static_cast<double>(s.input.shape[d]);
      continue;
    }
    const size_t k = d + s.out.size() - s.input.shape.size();
    const int64_t out = s.out[k];
    outputs *= static_cast<double>(out);
    if (s.op == PoolOp::nearest || s.op == PoolOp::bilinear)
      window *= s.op == PoolOp::bilinear && k + 2 >= s.out.size() ? 2 : 1;  // taps per dim
    else if (!s.kernel.empty())
      window *= static_cast<double>(s.kernel[k]);
    else if (out > 0)
      window *= static_cast<double>((s.input.shape[d] + out - 1) / out);
  }
  return outputs * (window + body_steps(s.epilogue));
}

double product(const std::vector<int64_t>& sizes) {
  double result = 1;
  for (int64_t size : sizes)
    result *= static_cast<double>(size);
  return result;
}

// 2·N·K·(C/groups)·prod(kernel)·prod(output) for the forward convolution; a transposed one does
// the work of the forward convolution it inverts (input and output exchanged). Plus one per
// output element per epilogue step, the kernel's (bias, activation, output transform) included,
// and for a channel reduction one per output element and one per reduced value per step of its
// epilogue.
double conv_flops(const ConvSpec& s) {
  const std::vector<int64_t>& forward_out = s.transposed ? s.input : s.output;
  const double macs =
      static_cast<double>(s.batch) *
      static_cast<double>(s.transposed ? s.in_channels : s.out_channels) *
      static_cast<double>((s.transposed ? s.out_channels : s.in_channels) / s.groups) *
      product(s.kernel) * product(forward_out);
  const double outputs = static_cast<double>(s.batch * s.out_channels) * product(s.output);
  const bool activation = s.kernel_epilogue != "none" && s.kernel_epilogue != "bias";
  const double kernel_epilogue_steps = (s.bias ? 1.0 : 0.0) + (activation ? 1.0 : 0.0);
  const double channels = static_cast<double>(s.out_channels);
  const double reduced = s.channel_reduce ? 1.0 + body_steps(s.reduce_epilogue) / channels : 0.0;
  return 2 * macs + outputs * (kernel_epilogue_steps + body_steps(s.epilogue) +
                               body_steps(s.output_transform) + reduced);
}

// Both products over the (batch, head, query, key) pairs the kernel visits (a causal mask skips
// the keys after each query), plus per visited score 4 for the online softmax and one per score
// body step.
double attention_flops(const AttentionSpec& s) {
  double pairs = 0;
  for (int64_t i = 0; i < s.queries; ++i)
    pairs += static_cast<double>(s.causal ? std::min(i + 1, s.keys) : s.keys);
  pairs *= static_cast<double>(s.batch * s.heads);
  const double per_pair = 2.0 * static_cast<double>(s.head_dim + s.value_dim) +
                          (s.norm == AttentionNorm::softmax ? 4.0 : 0.0) + body_steps(s.scores);
  return pairs * per_pair;
}

// Per step, per layer and direction: the input and recurrent products of every gate
// (2 * gates * hidden * (in + hidden) per batch row) plus the gate math (~ 8 per gate element
// for the LSTM's sigmoids, tanh and products; an estimate). Biases add 2 per gate element.
double recurrent_flops(const RecurrentSpec& s) {
  const double directions = s.bidirectional ? 2 : 1;
  const double gate_rows = recurrent_gates(s.cell) * static_cast<double>(s.hidden_size);
  double per_row = 0;
  for (int64_t layer = 0; layer < s.layers; ++layer) {
    const double in = layer == 0 ? static_cast<double>(s.input_size)
                                 : directions * static_cast<double>(s.hidden_size);
    per_row += directions * gate_rows *
               (2.0 * (in + static_cast<double>(s.hidden_size)) + 8.0 + (s.has_biases ? 2 : 0));
  }
  return per_row * static_cast<double>(s.batch * s.seq_len);
}

double spec_flops(const SubtaskSpec& spec) {
  return std::visit(
      [](const auto& s) -> double {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, MatmulSpec>) {
          const double outputs = static_cast<double>(s.batch * s.m * s.n);
          double per_output = 2.0 * static_cast<double>(s.k) + body_steps(s.epilogue);
          if (s.bias) per_output += 1;
          if (s.library_epilogue.find("relu") != std::string::npos ||
              s.library_epilogue.find("gelu") != std::string::npos)
            per_output += 1;
          return outputs * per_output;
        } else if constexpr (std::is_same_v<T, ConvSpec>) {
          return conv_flops(s);
        } else if constexpr (std::is_same_v<T, AttentionSpec>) {
          return attention_flops(s);
        } else if constexpr (std::is_same_v<T, ReductionSpec>) {
          const double inputs = static_cast<double>(s.outer * s.reduce * s.inner);
          const double outputs = static_cast<double>(s.outer * s.inner);
          // mean_var: a subtraction and two fused adds; logsumexp: a compare, an exp and an add.
          const double per_input =
              (s.op == ReduceOp::mean_var || s.op == ReduceOp::logsumexp ? 3.0 : 1.0) +
              body_steps(s.prologue);
          return inputs * per_input + outputs * body_steps(s.epilogue);
        } else if constexpr (std::is_same_v<T, RowSpec>) {
          const double per_element = s.op == RowOp::layer_norm ? 8.0 : 4.0;
          return static_cast<double>(s.rows * s.cols) *
                 (per_element + body_steps(s.prologue) + body_steps(s.epilogue));
        } else if constexpr (std::is_same_v<T, ElementwiseSpec>) {
          double numel = 1;
          for (int64_t size : s.shape)
            numel *= static_cast<double>(size);
          return numel * static_cast<double>(s.body.steps.size());
        } else if constexpr (std::is_same_v<T, PoolSpec>) {
          return pool_flops(s);
        } else if constexpr (std::is_same_v<T, RecurrentSpec>) {
          return recurrent_flops(s);
        } else if constexpr (std::is_same_v<T, GatherSpec>) {
          return 0.0;  // data movement (bytes: the input counted whole, a bound for repeats)
        } else if constexpr (std::is_same_v<T, ScanSpec>) {
          return static_cast<double>(s.outer * s.length * s.inner) *
                 (1.0 + body_steps(s.prologue) + body_steps(s.epilogue));
        } else {
          return 0.0;
        }
      },
      spec);
}

}  // namespace

double compute_peak_tflops(const Subtask& subtask, const GpuPeaks& peaks) {
  if (peaks.tf32_tflops > 0) {
    if (subtask_tensor_math(subtask) == TensorMath::tf32) return peaks.tf32_tflops;
    if (subtask_tensor_math(subtask) == TensorMath::bf16) return bf16_tflops(peaks);
  }
  const auto split = subtask.tunables.find("split_tf32x3");
  const bool tf32x3 = (split != subtask.tunables.end() && split->second == 1) ||
                      subtask.kernel == "igemm_tf32x3_conv";
  if (tf32x3 && peaks.tf32_tflops > 0) return tf32x3_tflops(peaks);
  return peaks.fp32_tflops;
}

double roofline_floor_us(double flops, double bytes, const GpuPeaks& peaks) {
  const double compute_us = peaks.fp32_tflops > 0 ? flops / (peaks.fp32_tflops * 1e6) : 0;
  const double memory_us = peaks.dram_gbps > 0 ? bytes / (peaks.dram_gbps * 1e3) : 0;
  return std::max(compute_us, memory_us);
}

SubtaskCost estimate_subtask_cost(const ir::Graph& graph, const Subtask& subtask,
                                  const GpuPeaks& peaks) {
  SubtaskCost cost;
  cost.flops = spec_flops(subtask.spec);
  std::vector<Access> counted;
  for (const Access& read : subtask_reads(subtask)) {
    if (std::find(counted.begin(), counted.end(), read) != counted.end()) continue;
    counted.push_back(read);
    cost.bytes += static_cast<double>(access_footprint(read)) *
                  ir::dtype_size(graph.type_of(read.base).dtype);
  }
  std::set<std::string> written;
  for (const ir::ValueRef& value : subtask_writes(subtask))
    if (written.insert(graph.name_of(value)).second)
      cost.bytes += static_cast<double>(graph.type_of(value).bytes());
  // A cat piece writes only its window of the target.
  if (const auto* copy = std::get_if<CopySpec>(&subtask.spec); copy && copy->destination) {
    cost.bytes -= static_cast<double>(graph.type_of(copy->target).bytes());
    cost.bytes += static_cast<double>(access_numel(*copy->destination)) *
                  ir::dtype_size(graph.type_of(copy->target).dtype);
  }
  const double compute_tflops = compute_peak_tflops(subtask, peaks);
  const double compute_us = compute_tflops > 0 ? cost.flops / (compute_tflops * 1e6) : 0;
  const double memory_us = peaks.dram_gbps > 0 ? cost.bytes / (peaks.dram_gbps * 1e3) : 0;
  cost.floor_us = std::max(compute_us, memory_us);
  if (const auto* rnn = std::get_if<RecurrentSpec>(&subtask.spec)) {
    // The recurrence serialises: every step of every layer (and direction) waits for the last.
    const double steps_us = recurrent_steps(*rnn) * kRecurrentStepUs;
    if (steps_us > cost.floor_us) {
      cost.floor_us = steps_us;
      cost.bound = Bound::latency;
      return cost;
    }
  }
  cost.bound = cost.floor_us < kLatencyFloorUs ? Bound::latency
               : compute_us >= memory_us       ? Bound::compute
                                               : Bound::memory;
  return cost;
}

}  // namespace stitch::plan

namespace stitch::plan {

namespace {

GpuPeaks plan_peaks(const GpuPeakRow& row) {
  return GpuPeaks{std::string(row.model), row.fp32_tflops, row.dram_gbps, row.sms, row.tf32_tflops};
}

}  // namespace

// The datasheet rows of util/gpu_peaks.h.
GpuPeaks h200_peaks() {
  return plan_peaks(h200_peak_row());
}

GpuPeaks peaks_for_gpu(const std::string& name, int sms) {
  const GpuPeakRow* row = find_gpu_peaks(name);
  GpuPeaks peaks = plan_peaks(row ? *row : h200_peak_row());
  if (row)
    peaks.name = name;
  else if (!name.empty())
    peaks.name = name + " (H200 rates assumed)";
  if (sms > 0) peaks.sms = sms;
  return peaks;
}

}  // namespace stitch::plan
