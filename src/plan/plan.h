// The plan: what the built-in Planner decides for one captured graph, and what the program emitter
// (src/codegen/) instantiates. plan.json is its serialized form (versioned, docs/plan-format.md).
//
// Pipeline (planner.h): the graph is rewritten by pure passes (passes.h), then partitioned into
// subtasks (fusion.h), each with a chosen kernel and tunables, ranked by the cost model
// (cost_model.h). The plan keeps the rewritten graph: every subtask refers to its nodes by index
// into Plan::graph.
//
// Values and memory. Every value the program touches lives in a *buffer*: a graph input, a param
// (after init-time preprocessing), a graph output, or an intermediate the emitter places in the
// workspace arena. View ops (view/reshape/permute/transpose/expand/slice/select/squeeze/unsqueeze/
// alias/t) are folded: a value produced by a view is described by an Access into its base buffer —
// offset, shape and strides in elements — and no subtask runs for it. Where a view cannot be
// expressed as strides (a reshape of a non-contiguous tensor), the planner inserts a copy subtask.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ir/ir.h"

namespace stitch::plan {

inline constexpr int kPlanVersion = 1;

// A strided window into a buffer. `base` is never a view's output: inputs, params and non-view node
// outputs own storage. Strides may be 0 (broadcast) and are in elements of the base's dtype.
struct Access {
  ir::ValueRef base;
  int64_t offset = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  bool operator==(const Access&) const = default;
  bool is_contiguous() const;  // strides == contiguous_strides(shape), offset free
};

// ---- Fused elementwise bodies ------------------------------------------------------------------
// A body is a small expression DAG evaluated per element of an index space. Operands are loads
// (Access, broadcast into the index space), results of earlier body steps, or scalar constants.
// Each step is one graph node (elementwise op) and keeps the node's args; the emitter renders it
// with emit_<op> (src/codegen/emit_elementwise.cc).
//
// Index space (planner contract, docs/plan-format.md): element i of a body is the i-th element in
// row-major order of the spec's shape (ElementwiseSpec::shape, [batch, m, n] for a GEMM epilogue,
// [outer, reduce, inner] for a reduction prologue, [outer, inner] for its epilogue, [rows, cols]
// for row kernels). Every load's Access has exactly as many elements as the index space, and
// element i reads the load's i-th element in row-major order of *its own* shape. In an
// ElementwiseSpec body and a GEMM epilogue every load has the index space's shape (one shape
// indexes all operands); in reduction and row bodies a load may keep another shape when strides
// could not re-express it (the generated functor then unravels the linear index). Broadcast
// operands have stride 0. Every step's result has the index space's element count.
// BodyStep::operands: one per leading tensor-or-number argument of the op (1 unary, 2 binary,
// 3 ternary, 0 for creation ops such as full/arange); a number argument, or a 0-dim constant
// tensor (scalar_tensor/full) folded by the planner, is Kind::scalar. Other args (alpha, clamp
// bounds, slopes, gelu's approximate, pow's exponent) are read from the node.
struct Operand {
  enum class Kind : uint8_t { load, step, scalar, index };
  Kind kind = Kind::load;
  int index = 0;      // into Body::loads or Body::steps; for `index`: which reduction axis value
  double scalar = 0;  // Kind::scalar
  bool operator==(const Operand&) const = default;
};

struct BodyStep {
  int node = -1;                  // index into Plan::graph.nodes (its op and scalar args)
  std::vector<Operand> operands;  // the node's leading tensor/number args, in order (see above)
  ir::DType dtype = ir::DType::float32;  // result dtype (compare ops give bool)
  bool operator==(const BodyStep&) const = default;
};

struct Body {
  std::vector<Access> loads;    // broadcast into the body's index space
  std::vector<BodyStep> steps;  // topological order
  bool operator==(const Body&) const = default;
};

// What a subtask writes: a value (node output) and the buffer it is stored in. The buffer is the
// value itself (an arena slot or a graph output), never a view.
struct Store {
  ir::ValueRef value;
  Operand from;  // which body result (Kind::step) or load produces it
  bool operator==(const Store&) const = default;
};

// ---- Subtask kinds -----------------------------------------------------------------------------

// What a GEMM library call (MatmulSpec::library_epilogue) or one of the project's convolution
// kernels (ConvSpec::kernel_epilogue) applies as it stores: kernels/matmul.cuh's MatmulEpilogue.
inline bool is_store_epilogue(std::string_view name) {
  for (std::string_view known : {"none", "relu", "gelu", "bias", "bias_relu", "bias_gelu"})
    if (name == known) return true;
  return false;
}

// C[b] = epilogue(alpha * op(A[b]) @ op(B[b]) + bias) over a [batch, m, n] index space. A, B are
// Access with shapes [batch, m, k] and [batch, k, n] (batch 1 for mm/addmm); their strides say
// whether the kernel reads them transposed. The epilogue body's load 0 is the GEMM result (its
// Access is the buffer the GEMM writes); further loads broadcast into [batch, m, n].
// stores[0] is always what the GEMM call itself writes (from = load 0: the matmul node's value, or
// the last node folded into library_epilogue); further stores come from the epilogue pass.
// `bias`: shape [n] (a per-column vector, library epilogue "bias*", beta == 1) or [batch, m, n]
// (cuBLASLt's C matrix, scaled by beta, library epilogue "none"/"relu"/"gelu").
struct MatmulSpec {
  int node = -1;  // the mm/addmm/bmm/baddbmm node
  int64_t batch = 1, m = 0, n = 0, k = 0;
  Access a, b;
  std::optional<Access> bias;      // broadcast over rows: [n] (or [m, n] full, added as C)
  double alpha = 1.0, beta = 1.0;  // addmm's scalars (beta scales bias/C)
  // The library epilogue folded into the GEMM call ("none", "relu", "gelu", "bias", "bias_relu",
  // "bias_gelu"); what remains of the elementwise chain runs as `epilogue` in one extra pass.
  std::string library_epilogue = "none";
  std::optional<Body> epilogue;  // load 0 = the GEMM output
  std::vector<Store> stores;     // the GEMM output itself and/or epilogue results
  bool operator==(const MatmulSpec&) const = default;
};

// logsumexp: log(sum(exp(x))), in one pass (kernels/reduction.cuh keeps the max and the sum).
enum class ReduceOp : uint8_t { sum, max, min, prod, argmax, argmin, mean_var, logsumexp };
inline constexpr const char* kReduceOpNames[] = {"sum",    "max",    "min",      "prod",
                                                 "argmax", "argmin", "mean_var", "logsumexp"};

// y = conv(x, w) (transposed: conv_transpose) through cuDNN, then epilogue(y) over the output's
// [batch, out_channels, output...] index space, like a GEMM's. Sizes are PyTorch's: x is
// [batch, in_channels, input...] and w [out_channels, in_channels / groups, kernel...]
// ([in_channels, out_channels / groups, kernel...] transposed), both contiguous Accesses; the
// output sizes of a transposed convolution include its output_padding. pad_before / pad_after are
// the convolution's padding plus a folded zero constant_pad_nd of the spatial dims (asymmetric
// padding arrives that way). The convolution's bias is lowered to an add the epilogue carries.
// stores[0] is what the convolution call writes (the convolution node's value, epilogue load 0);
// further stores come from the epilogue pass.
// `kernel_epilogue` (the project's kernels igemm_tf32x3_conv and direct_conv only, folded after
// kernel choice: conv_epilogue.h): act(conv + bias[co]) done as the kernel stores, "none", "bias",
// "relu", "gelu" (tanh form), "bias_relu" or "bias_gelu" as a GEMM's library epilogue; stores[0]
// is then the last folded node's value (in a buffer of its own or, for a forward convolution, its
// window of a cat's, written through the kernel's output map), `bias` the contiguous
// [out_channels] vector, and `epilogue` what remains of the chain (load 0: that value).
// `prologue` (kernel depthwise_conv only): elementwise work on the input fused into the kernel's
// loads — a training-mode BatchNorm's normalisation and activation — evaluated per element of the
// [batch, in_channels, input...] index space; load 0 is x, the raw contiguous input, and every
// other load is constant over the spatial dims (one value per (n, c) plane). Padding pads the
// prologue's result.
// `output_transform` (the project's kernels only, folded after kernel choice: conv_epilogue.h): the
// whole elementwise epilogue applied by the kernel to each result as it stores, after
// kernel_epilogue — `epilogue` is then empty and stores[0] the one value it stores, its `from`
// the operand of this body that value is. Load 0 is the result in registers (its Access where
// stores[0] lives); every other load is one value per (n, c) plane of the output space.
// `channel_reduce` (direct_conv and igemm_tf32x3_conv, folded after kernel choice:
// conv_epilogue.h): a reduction over the output channels (sum, max or min; one group, forward)
// done by the kernel as it stores — the convolution's own output is never written, and no cuDNN
// is timed against the kernel. Each result, after kernel_epilogue and the output transform (if
// any: its result is then its last step), is combined over the channels of its position; then
// `reduce_epilogue` per reduced value (load 0, in registers; every other load one value per
// image) gives stores[0], the one value stored, [batch, 1, output...] or [batch, output...] in a
// contiguous buffer of its own.
struct ConvSpec {
  int node = -1;  // the convolution node
  int64_t batch = 1, in_channels = 0, out_channels = 0, groups = 1;
  std::vector<int64_t> input, output, kernel;  // spatial sizes: 1 to 3 dims each
  std::vector<int64_t> stride, pad_before, pad_after, dilation;
  bool transposed = false;
  Access x, w;
  std::optional<Body> prologue;  // load 0 = x
  std::string kernel_epilogue = "none";
  std::optional<Access> bias;    // [out_channels], with a "bias*" kernel epilogue
  std::optional<Body> epilogue;  // load 0 = the convolution's output (after kernel_epilogue)
  std::optional<Body> output_transform;  // load 0 = the same, in the kernel's registers
  std::optional<ReduceOp> channel_reduce;
  std::optional<Body> reduce_epilogue;  // load 0 = the reduced value, in the kernel's registers
  std::vector<Store> stores;
  bool operator==(const ConvSpec&) const = default;
};

// Reduces an [outer, reduce, inner] index space over the middle axis. The prologue body is
// evaluated per input element (load 0 is the reduced tensor; other loads broadcast); the epilogue
// body per output element (load 0 is the reduced value; Operand::index 0 gives the reduce count as
// a float).
// Planner details: `input` is the tensor the kernel iterates, as an [outer, reduce, inner] Access;
// with a prologue, prologue.loads[0] == input and the reduced value is the last prologue step.
// The epilogue's load k is output k of `node` (a register value; its Access names that value):
// max.dim/min.dim give (values, indices), argmax/argmin indices only, var_mean.correction
// (mean_var) gives (var, mean) with var = m2 / (reduce - correction). Stores from load k store
// output k. A one-element epilogue step (a detached scalar, fusion rule F9) reads its loads
// broadcast over [outer, inner]; its store is written by output element 0 only.
struct ReductionSpec {
  int node = -1;  // the reduction node (sum.dim_IntList, amax, var_mean, ...)
  Access input;
  double correction = 0;  // mean_var only
  int64_t outer = 1, reduce = 1, inner = 1;
  ReduceOp op = ReduceOp::sum;
  std::optional<Body> prologue;
  std::optional<Body> epilogue;
  std::vector<Store> stores;
  bool operator==(const ReductionSpec&) const = default;
};

// Row-wise fused kernels over [rows, cols] (the normalized axes last and contiguous after
// planning): softmax / log_softmax, LayerNorm (weight/bias optional), RMSNorm (weight optional).
// Prologue/epilogue bodies as for reductions, per element.
// `input` is [rows, cols] with unit column stride; weight/bias are [cols]. The epilogue's load 0 is
// the row op's result (value of `node`, a register value); stores from load 0 store that result.
// rms_norm computes x * rsqrt(mean(x*x) + eps) (* weight); matched from pow/mean/add/rsqrt/mul
// (or sqrt/div) patterns, where `node` is the pattern's last node.
enum class RowOp : uint8_t { softmax, log_softmax, layer_norm, rms_norm };
struct RowSpec {
  int node = -1;  // the row op node (or the last node of an rms_norm pattern)
  RowOp op = RowOp::softmax;
  int64_t rows = 0, cols = 0;
  Access input;
  std::optional<Access> weight, bias;
  double eps = 1e-5;
  std::optional<Body> prologue, epilogue;
  std::vector<Store> stores;
  bool operator==(const RowSpec&) const = default;
};

// A fused elementwise chain over `shape` (the stores' shape).
struct ElementwiseSpec {
  std::vector<int64_t> shape;
  Body body;
  std::vector<Store> stores;
  bool operator==(const ElementwiseSpec&) const = default;
};

// A copy into a contiguous buffer (a reshape the strides cannot express, a clone, cat pieces).
struct CopySpec {
  Access source;
  ir::ValueRef target;
  // Where in target's buffer the source lands (same shape as source): a piece of a cat. Absent:
  // the whole target, contiguous.
  std::optional<Access> destination;
  bool operator==(const CopySpec&) const = default;
};

// Pooling over the trailing `kernel.size()` (1 to 3) spatial dims of `input` (the leading dims are
// independent planes): max / avg windows (kernel, stride, padding; dilation for max; ceil mode is
// in the output's shape), adaptive max / avg (windows from the input and output sizes, kernel etc.
// empty). kernels/pooling.cuh reads `input` through its strides, once. Epilogue body over the
// output's shape: load 0 is the pooled value, load 1 (max with indices) the maximum's flat spatial
// input index, both register values of `node`; stores from load k store output k.
// Upsampling is a PoolSpec too (`nearest`, `bilinear` over the last two dims): `scale` holds the
// source step per output position of each spatial dim, as PyTorch computes it in float.
enum class PoolOp : uint8_t { max, avg, adaptive_max, adaptive_avg, nearest, bilinear };
inline constexpr const char* kPoolOpNames[] = {"max",          "avg",     "adaptive_max",
                                               "adaptive_avg", "nearest", "bilinear"};
struct PoolSpec {
  int node = -1;  // the pooling node
  PoolOp op = PoolOp::max;
  Access input;
  std::vector<int64_t> out;  // output spatial sizes
  std::vector<int64_t> kernel, stride, padding, dilation;
  bool count_include_pad = true;  // avg
  int64_t divisor = 0;            // avg divisor_override; 0: none
  std::vector<double> scale;      // nearest, bilinear (float values)
  bool align_corners = false;     // bilinear
  std::optional<Body> epilogue;
  std::vector<Store> stores;
  bool operator==(const PoolSpec&) const = default;
};

// Attention fused into one flash-style kernel (kernels/attention.cuh): per (batch, head) and query
// row i, out[i] = sum_j p(i, j) * v[j] with s(i, j) = scale * q[i] . k[j], then
//   the SDPA mask (`mask`: boolean = keep where true, else -inf; additive = + mask),
//   the score body (`scores`: masks, biases, ReLU... of the explicit pattern),
//   causal: -inf for j > i (scaled_dot_product_attention's is_causal, top-left aligned),
// and p = softmax over j (norm softmax, online) or p = s itself (norm none: relu(s) @ v).
// q, k, v are [batch, heads, queries, head_dim], [batch, heads, keys, head_dim] (k itself, not its
// transpose) and [batch, heads, keys, value_dim] Accesses with unit stride in the last dim; `mask`
// broadcasts to [batch, heads, queries, keys]. The score body's index space is [batch, heads,
// queries, keys]: load 0 is the scaled (and SDPA-masked) score, other loads broadcast into it.
// stores[0] is the output, contiguous [batch, heads, queries, value_dim] (`from` unused).
// `node`: the P.V bmm of the explicit pattern, or the scaled_dot_product_attention node.
enum class AttentionNorm : uint8_t { softmax, none };
enum class AttentionMask : uint8_t { none, boolean, additive };
inline constexpr const char* kAttentionNormNames[] = {"softmax", "none"};
inline constexpr const char* kAttentionMaskNames[] = {"none", "boolean", "additive"};
struct AttentionSpec {
  int node = -1;
  int64_t batch = 1, heads = 1, queries = 0, keys = 0, head_dim = 0, value_dim = 0;
  Access q, k, v;
  double scale = 1.0;
  bool causal = false;
  AttentionNorm norm = AttentionNorm::softmax;
  AttentionMask mask_kind = AttentionMask::none;
  std::optional<Access> mask;
  std::optional<Body> scores;
  std::vector<Store> stores;
  // Where the output lands in stores[0].value's buffer, [batch, heads, queries, value_dim]
  // through strides: a copy of it folded into the store (copy_folding.h). Absent: that buffer
  // whole, contiguous in [batch, heads, queries, value_dim] order.
  std::optional<Access> output;
  bool operator==(const AttentionSpec&) const = default;
};

// A prefix scan (cumsum / cumprod) along the middle axis of an [outer, length, inner] index space:
// y[o, p, i] = x[o, 0, i] op ... op x[o, p, i] (inclusive), or op over q < p with the identity at
// p = 0 (`exclusive`); `reverse` runs from the last position to the first (op over q >= p, or
// q > p exclusive). Accumulation is FP32 in the order kernels/scan.cuh documents. `input` is the
// tensor scanned, as an [outer, length, inner] Access when its strides merge so (a flipped input
// has a negative stride), otherwise in its own shape (the functor unravels the index); with a
// prologue, prologue.loads[0] == input and the scanned value is the last prologue step
// (index space [outer, length, inner], as a reduction's). The epilogue runs per output element
// over [outer, length, inner]: load 0 is the scanned value (a register value of `node`); stores
// from load 0 store it.
enum class ScanOp : uint8_t { sum, prod };
inline constexpr const char* kScanOpNames[] = {"sum", "prod"};
struct ScanSpec {
  int node = -1;  // the cumsum / cumprod node
  ScanOp op = ScanOp::sum;
  int64_t outer = 1, length = 1, inner = 1;
  bool reverse = false;
  bool exclusive = false;
  Access input;
  std::optional<Body> prologue, epilogue;
  std::vector<Store> stores;
  bool operator==(const ScanSpec&) const = default;
};

// A gather along one dim (index_select; index.Tensor with one index tensor, on dim 0):
// y[o, j, i] = x[o, index[j], i] over an [outer, count, inner] index space, x being
// [outer, size, inner] around the gathered dim and `count` the index tensor's element count (its
// elements in row-major order; index.Tensor's output puts the index's shape in the dim's place).
// per_element (torch.gather, whose index has the output's shape): y[o, j, i] = x[o, index[o, j, i],
// i], `count` the index's size along the dim; `index` is then [outer, count, inner].
// Negative indices wrap, as index.Tensor's do; an index outside [-size, size) stores NaN instead
// of reading outside x (PyTorch raises a device-side assert). stores: the node's value.
struct GatherSpec {
  int node = -1;  // the index_select / index.Tensor node
  int64_t outer = 1, size = 1, count = 1, inner = 1;
  Access input;  // [outer, size, inner] when its strides merge so, else its own shape
  Access index;  // int64 or int32: `count` elements, or outer * count * inner per_element
  bool per_element = false;
  std::vector<Store> stores;
  bool operator==(const GatherSpec&) const = default;
};

// A recurrent network kept whole — PyTorch's nn.LSTM / nn.GRU / nn.RNN (aten.lstm.input,
// aten.gru.input, aten.rnn_tanh.input, aten.rnn_relu.input), multi-layer, uni- or bidirectional —
// run by cuDNN's RNN API (kernels/rnn.cuh, kernel "cudnn_rnn"; no dropout: inference mode).
// x is [seq_len, batch, input_size] ([batch, seq_len, input_size] batch_first), h0 and c0
// (LSTM only) [layers * directions, batch, hidden_size]; all contiguous. params: PyTorch's flat
// list (per layer, per direction: w_ih, w_hh, then b_ih, b_hh with biases), contiguous.
// Stores: from load k, output k of `node` (0: y [seq_len, batch, directions * hidden_size] or
// batch-first; 1: h_n; 2: c_n). y is always stored (cuDNN writes it); h_n and c_n only when used.
enum class RecurrentCell : uint8_t { lstm, gru, rnn_tanh, rnn_relu };
inline constexpr const char* kRecurrentCellNames[] = {"lstm", "gru", "rnn_tanh", "rnn_relu"};
struct RecurrentSpec {
  int node = -1;  // the lstm / gru / rnn_tanh / rnn_relu node
  RecurrentCell cell = RecurrentCell::lstm;
  int64_t seq_len = 0, batch = 0, input_size = 0, hidden_size = 0, layers = 1;
  bool bidirectional = false, batch_first = false, has_biases = true;
  Access x, h0;
  std::optional<Access> c0;    // LSTM only
  std::vector<Access> params;  // PyTorch's order
  std::vector<Store> stores;
  bool operator==(const RecurrentSpec&) const = default;
};

// A node the built-in Coder does not cover, kept whole when the Planner is asked to
// (PlanOptions::keep_uncovered, the hybrid Coder) instead of refusing the graph: an LLM implements
// it against a generated signature (codegen/subtask_signature.h). `inputs`: the Access of each
// tensor argument, in argument order; stores: the node's outputs (`from` unused).
struct OpaqueSpec {
  int node = -1;
  std::vector<Access> inputs;
  std::vector<Store> stores;
  std::string reason;  // why the built-in Coder refuses it (pass "coverage")
  bool operator==(const OpaqueSpec&) const = default;
};

using SubtaskSpec =
    std::variant<MatmulSpec, ReductionSpec, RowSpec, ElementwiseSpec, CopySpec, PoolSpec, ConvSpec,
                 OpaqueSpec, AttentionSpec, ScanSpec, GatherSpec, RecurrentSpec>;

// Where the subtask's time goes, by the cost model.
enum class Bound : uint8_t { memory, compute, latency };

struct Subtask {
  std::string id;          // stable procedural name, e.g. "s02_matmul_bias_relu_64x1024x512"
  std::vector<int> nodes;  // graph nodes it covers (for plan.json and error messages)
  SubtaskSpec spec;
  std::string kernel;  // kernel-library entry: "cublaslt_matmul", "elementwise", ...
  std::map<std::string, int64_t> tunables;  // "block": 256, "vector_width": 4, "algo_candidates": 8
  double flops = 0, bytes = 0;              // cost model inputs
  double floor_us = 0;                      // max(flops/peak, bytes/bandwidth): the roofline floor
  Bound bound = Bound::memory;
  // Reads only params and constants: may run once in stitch_init, its stores then living in the
  // persistent block (BufferSlot::Where::persistent). Running it every forward is also correct.
  bool at_init = false;
  bool operator==(const Subtask&) const = default;
};

// Done once at init on a param (or a constant computed from params).
struct ParamPrep {
  int param = -1;      // index into graph.params
  std::string action;  // "transpose", "contiguous", ...
  std::string detail;
  bool operator==(const ParamPrep&) const = default;
};

struct Skipped {
  std::string node_id;
  std::string reason;  // "dead: no output depends on it"
  bool operator==(const Skipped&) const = default;
};

struct HostStrategy {
  bool cuda_graph = true;       // capture on the first forward, replay (keyed by input pointers)
  int64_t workspace_bytes = 0;  // the arena: intermediates + library workspaces
  // The arena's last library_workspace_bytes (256-byte aligned) are cuBLASLt's workspace.
  int64_t library_workspace_bytes = 0;
  int64_t persistent_bytes = 0;  // results of at_init subtasks, allocated in stitch_init
  bool operator==(const HostStrategy&) const = default;
};

// Where a stored value lives. Every value a subtask stores (Store::value, CopySpec::target) has
// one. A graph output that is a full contiguous view of a node value makes that node value live in
// the caller's output buffer (Where::output, offset = the graph output index).
struct BufferSlot {
  enum class Where : uint8_t { arena, output, persistent };
  std::string value;  // Graph::name_of
  Where where = Where::arena;
  int64_t offset = 0;  // bytes into the arena / persistent block; output index
  int64_t bytes = 0;
  bool operator==(const BufferSlot&) const = default;
};

// Peak rates the cost model used (read from the device, or a spec table by GPU name).
struct GpuPeaks {
  std::string name = "NVIDIA H200";
  double fp32_tflops = 0;  // non-tensor-core FP32
  double dram_gbps = 0;
  int sms = 0;
  double tf32_tflops = 0;  // dense TF32 tensor cores (split-precision 3xTF32 GEMMs); 0: none
  bool operator==(const GpuPeaks&) const = default;
};

struct Plan {
  int version = kPlanVersion;
  std::string task;
  ir::Graph graph;  // after the passes; subtasks index into it
  // The Access of every value a subtask reads or writes, views resolved (key: value's name,
  // Graph::name_of). Buffers (inputs, params, outputs, intermediates) map to themselves.
  std::map<std::string, Access> values;
  std::vector<Subtask> subtasks;    // execution order
  std::vector<BufferSlot> buffers;  // one per stored value, in subtask order
  std::vector<Skipped> skipped;
  std::vector<ParamPrep> param_preps;
  HostStrategy host;
  GpuPeaks peaks;
  double floor_us = 0;  // sum of the subtasks' floors
  bool operator==(const Plan&) const = default;
};

}  // namespace stitch::plan
