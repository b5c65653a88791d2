// The Planner's graph passes, in pipeline order (planner.cc lists them; each can be dumped with
// `stitchcuda plan --dump-after=<name>`). Every pass is a pure function of its input graph and the
// options; ir::verify() runs after each. A pass that can refuse the graph returns an Error naming
// the node.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ir/ir.h"
#include "plan/kernel_choice.h"  // TensorMath
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

// H200 SXM spec sheet: 67 TFLOP/s FP32 (non-tensor), 4.8 TB/s HBM3e, 132 SMs.
GpuPeaks h200_peaks();
// Spec-table peaks by device name ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", ...); an
// unknown name keeps H200's rates with the given SM count when one is given.
GpuPeaks peaks_for_gpu(const std::string& name, int sms = 0);

struct PlanOptions {
  GpuPeaks peaks = h200_peaks();
  // Lower a matrix-vector product (mm with one output column) to a multiply + row reduction: it is
  // memory bound, and a reduction reads the matrix once at full bandwidth.
  bool lower_gemv = true;
  // A row kernel (softmax, layer_norm) handles one row per block; with fewer rows than SMs and
  // rows longer than this, layer_norm is lowered to a split reduction + elementwise instead.
  int64_t row_kernel_max_cols = 65536;
  // GEMMs may run as split-precision 3xTF32 (FP32-accurate, on tensor cores) where the time model
  // prefers it; false keeps every GEMM strict FP32 (`generate --strict-fp32-gemm`).
  bool allow_tf32x3 = true;
  // What every GEMM computes with (the app maps the precision track to it: tf32 → tf32, bf16 →
  // bf16); fp32 leaves each GEMM's strict / 3xTF32 choice to the time model.
  TensorMath tensor_math = TensorMath::fp32;
  // Which engine runs the convolutions the implicit-GEMM 3xTF32 kernel can run: automatic (the
  // time model, fp32 track only), or forced for measurement (STITCH_CONV_ENGINE). allow_tf32x3 =
  // false keeps the automatic choice on cuDNN.
  ConvEngine conv_engine = ConvEngine::automatic;
  // A sum over a GEMM's output features (through scalar scales) becomes a matrix-vector product
  // with the weight summed first (pass "lower", lower_gemm_sum).
  bool reassociate_gemm_sums = true;
  // Eval semantics (`--inference`): BatchNorm uses its running statistics, folded into a
  // per-channel affine computed once at init, even where the capture is in training mode.
  // TODO(conv): fold that affine into the preceding convolution once ConvSpec exists.
  bool inference = false;
  // The target GPU's memory: a plan that needs more (memory_plan.h, DeviceFootprint) is refused.
  // 0: the peak table's figure for peaks.name (util/gpu_peaks.h).
  int64_t device_memory_bytes = 0;
  // Keep nodes outside the covered families as opaque subtasks (OpaqueSpec) instead of refusing
  // the graph: the hybrid Coder has an LLM write them.
  bool keep_uncovered = false;
  // `--dump-after`: the pass whose result `dump` receives (its text form).
  std::string dump_after;
  std::function<void(std::string_view pass, const std::string& text)> dump;
};

// shapes: recomputes the output shape and dtype of every covered op from its arguments and compares
// them with the captured types; the graph is returned unchanged.
Result<ir::Graph> check_shapes(const ir::Graph& graph, const PlanOptions& options);

// dead-code: removes nodes no graph output depends on (and nodes without outputs, such as
// _assert_tensor_metadata); `skipped` receives one entry per removed node.
ir::Graph eliminate_dead_code(const ir::Graph& graph, std::vector<Skipped>* skipped);

// coverage: refuses a graph holding an op outside the families the built-in Coder covers, naming
// the node and op: "node 'cumsum' (aten.cumsum.default): scan (cumsum) is not covered by the
// built-in Coder yet".
Status check_coverage(const ir::Graph& graph);
// Empty when the node is covered; otherwise why not (without the node name).
std::string uncovered_reason(const ir::Graph& graph, const ir::Node& node);

// recurrences: a Python-loop RNN cell captured as one copy per time step (cat(x_t, h) → Linear →
// tanh / relu, step t's state read from step t-1's output) becomes one recurrent layer
// (aten.rnn_tanh / rnn_relu: the x side of all steps in one GEMM, only h @ W_hhᵀ sequential), and
// a per-step row-wise map of the states stacked along dim 0 (the h2o Linear) one GEMM over all
// steps (pass_unrolled_rnn.cc). Graphs without such a chain are returned unchanged.
Result<ir::Graph> fold_unrolled_recurrences(const ir::Graph& graph);

// lower: rewrites composite ops into the primitives fusion maps onto kernels (see
// pass_lowering.cc for the table): batch/group norm, var, logsumexp, norms, softmax over a
// non-last dim, mean, multi-block reductions, trivial reductions, clone, addmm with odd biases,
// GEMM row orders (lower_bmm.cc); then drops the nodes those rewrites left unread.
Result<ir::Graph> lower_composites(const ir::Graph& graph, const PlanOptions& options);
// fold-batchnorm: a BatchNorm with eval semantics (eval-mode capture, or --inference) right after a
// convolution whose output nothing else reads becomes that convolution's weight and bias,
// computed from params at init.
ir::Graph fold_batch_norm_into_conv(const ir::Graph& graph, const PlanOptions& options);

// merge-gemms: pointwise convolutions of one input whose results only elementwise ops read become
// one GEMM over their weights concatenated (at init), each result a channel slice of its product
// (pass_merge_gemms.cc). Graphs without such siblings are returned unchanged.
ir::Graph merge_sibling_gemms(const ir::Graph& graph);

// materialize: inserts clones where an Access cannot describe what a kernel needs — a reshape of a
// non-contiguous tensor, a row input whose dims do not merge (a reduction reads any strides), a
// GEMM operand with no unit stride, a graph output that is not a full contiguous buffer of its own.
Result<ir::Graph> materialize_layouts(const ir::Graph& graph, const PlanOptions& options);

// views (an analysis, not a rewrite): the Access of every value, views folded. Keys: value_key().
// Fails when a view cannot be expressed (materialize guarantees it can). `homes`: node values that
// live in a window of another buffer (a cat's, cat_placement.h) instead of their own, or in their
// own in another order (channels-last, layout.h).
Result<std::map<std::string, Access>> fold_views(
    const ir::Graph& graph, const std::map<std::string, Access>* homes = nullptr);
// The Access one view node's output `out` has, given its input's Access; nullopt when strides
// cannot express it; an Error for malformed args.
Result<std::optional<Access>> view_access(const ir::Graph& graph, const ir::Node& node, int out,
                                          const Access& input);

}  // namespace stitch::plan
