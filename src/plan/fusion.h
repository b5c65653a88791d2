// Fusion: partitions the lowered graph into groups, each one subtask (plan.h).
//
// Legality rules (each a small pure function below, unit-tested in tests/plan/fusion_test.cc):
//   F1 anchors   Every non-view node lands in exactly one group. Anchors start a group: GEMMs
//                (mm/addmm/bmm/baddbmm), convolutions (with the zero spatial pad they fold,
//                conv_geometry.h), primitive reductions, row ops (softmax/log_softmax over
//                the last dim, native_layer_norm, a matched rms_norm pattern), scans (cumsum,
//                cumprod), gathers (index_select, index.Tensor; nothing fuses into them),
//                recurrent layers (lstm/gru/rnn, alone: nothing fuses into cuDNN's call),
//                copies (clone, cat) and pools. Other nodes (elementwise, creation) join a group
//                or start an elementwise group. A constant scalar (scalar_tensor, full([])) read
//                only directly by elementwise nodes is folded into their operands and belongs to
//                no group.
//   F2 index     A node joins a body only if its element count equals the body's index space (GEMM
//                output, reduction/row input for a prologue, reduction output / row shape for an
//                epilogue, first node's shape for an elementwise group).
//   F3 prologue  An elementwise producer joins a reduction's, scan's or row op's prologue only if
//   every use
//                of its value (through views) is inside the group, it is not a graph output, the
//                views on the way preserve element order (view/reshape/squeeze/unsqueeze/alias),
//                and its operands broadcast to its shape. A prologue needs one load whose strides
//                can be indexed as the anchor's [outer, reduce, inner] / [rows, cols] (the kernel's
//                input); without one the prologue is dropped.
//   F4 epilogue  A later elementwise node joins a group only if it reads a value of the group (for
//                an elementwise group, also: if it shares a load with it), reads group values only
//                through order-preserving views, and every other operand is available: an input, a
//                param, a folded constant, or a value of an earlier group. In an elementwise group
//                or a GEMM epilogue every load must be expressible in the index space's shape (the
//                elementwise kernel indexes all operands by one shape); a convolution's or scan's
//                epilogue likewise, in its output shape. A node that reads no group value but
//                only available ones (and other such nodes) waits as a side chain: it joins with
//                the first joining node that reads it (BatchNorm's running_mean * (1 - momentum)
//                with the blend that adds the batch mean), and is swept on its own otherwise.
//   F5 library   A GEMM folds into cuBLASLt's call, in order: multiplications/divisions by numbers
//                (into alpha; mm/bmm only, before any bias), a per-column bias (addmm's [n] bias
//                with beta 1, or an add of a contiguous [n] vector with alpha 1), then relu or
//                gelu(approximate='tanh'); each only when the value before it has exactly one use
//                and is not a graph output. The rest of the chain is the epilogue body (an extra
//                pass).
//   F6 stores    A group value is stored iff it is a graph output (through views) or read by a node
//                outside the group.
//   F8 attention The explicit attention pattern and scaled_dot_product_attention
//                (attention_pattern.h) are one group, claimed before the sweep like rms_norm:
//                anchor bmm2 / the SDPA node, pattern = bmm1, the scale, the softmax and the
//                clones it reads through, prologue = the score chain (the scores body). No
//                epilogue joins it yet.
//   F9 scalars   A one-element elementwise node that reads only inputs, params and folded
//                constants and whose value is read by no node, only returned (a state update such
//                as BatchNorm's num_batches_tracked + 1), joins the epilogue of the next reduction
//                after it, where output element 0 stores it: no launch of its own. Without a later
//                reduction it is an elementwise group.
//   F10 conv     A convolution whose kernel applies an input transform (ConvPrologueRule: the
//                depthwise kernel as it loads; the implicit GEMM as it copies x, where the planner
//                puts it there — conv_takes_prologue, kernel_choice.h) takes a prologue as F3
//                says — a training-mode BatchNorm's normalisation and activation — when it reads
//                one float32 input of the convolution's input shape, contiguous (for the implicit
//                GEMM dense per image: a cat's piece), and otherwise only values constant over the
//                spatial dims (one per (n, c) plane); padding pads its result. Without one, the
//                convolution is grouped as usual.
//   F11 sink     After the sweep: an elementwise group whose values one later elementwise group
//                alone reads (no graph output; directly or through order-preserving views) over
//                the same index space runs inside that group, which then reads the earlier one's
//                inputs instead of a stored value (a residual block's BatchNorm + ReLU branch,
//                which the shortcut's statistics keep apart from the add in the sweep). Not a
//                group over constants only: that one runs once at init.
//   F7 order     Groups run in the order the topological sweep creates them; a prologue (and an F9
//                scalar) is claimed before the sweep, its group created at the anchor, so every
//                load is produced by an earlier group.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "plan/attention_pattern.h"
#include "plan/graph_edit.h"
#include "plan/plan.h"

namespace stitch::plan {

// opaque: a node outside the covered families, alone (PlanOptions::keep_uncovered).
enum class GroupKind : uint8_t {
  matmul,
  reduction,
  row,
  elementwise,
  copy,
  pool,
  conv,
  opaque,
  attention,
  scan,
  gather,
  recurrent  // an LSTM / GRU / RNN node alone (nothing fuses into cuDNN's call)
};

struct Group {
  GroupKind kind = GroupKind::elementwise;
  int anchor = -1;  // the GEMM / reduction / row op / copy node; -1 for elementwise
  RowOp row_op = RowOp::softmax;
  // reduction/row: per input element, topological order; attention: the score chain
  std::vector<int> prologue;
  std::vector<int> library;   // matmul: nodes folded into the library epilogue, in order
  std::string library_epilogue = "none";
  std::optional<ir::ValueRef> bias;  // matmul: the per-column bias folded from an add
  double alpha = 1;                  // matmul: scalar factors folded from mul/div nodes
  // rms_norm: the pattern's nodes other than `anchor`; conv: the zero pad folded into its padding
  std::vector<int> pattern;
  std::optional<ir::ValueRef> rms_input, rms_weight;
  double rms_eps = 0;
  std::optional<AttentionMatch> attention;  // F8: spec without body and stores, the chain's start
  std::vector<int> body;           // epilogue, or the elementwise chain, topological order
  std::vector<int> nodes() const;  // every node of the group, sorted
};

struct Fusion {
  std::vector<Group> groups;       // execution order
  std::set<int> folded_constants;  // constant scalar nodes folded into operands (F1)
};

// Values keyed by value_key() (fold_views()).
using ValueMap = std::map<std::string, Access>;

// F10: whether a convolution, as planned without a prologue, takes one. Empty: where the depthwise
// kernel can run it (depthwise_conv_eligible).
using ConvPrologueRule = std::function<bool(const ConvSpec&)>;

// keep_uncovered: a node outside the covered families (uncovered_reason, passes.h) is a group of
// its own (GroupKind::opaque) that nothing fuses into.
Fusion fuse(const ir::Graph& graph, const ValueMap& values, bool keep_uncovered = false,
            const ConvPrologueRule& conv_takes_prologue = {});

// ---- The rules, exposed for tests -------------------------------------------------------------

bool is_anchor(const ir::Graph& graph, int node);                               // F1
bool is_foldable_constant(const ir::Graph& graph, const Uses& uses, int node);  // F1
bool preserves_order(ir::Op op);  // view ops that keep row-major element order (F3, F4)
// Follows order-preserving views from `ref` back to a non-view value; nullopt when another view
// (permute, expand, slice...) is on the way.
std::optional<ir::ValueRef> through_order_preserving_views(const ir::Graph& graph,
                                                           ir::ValueRef ref);
int64_t value_numel(const ir::Graph& graph, const ir::ValueRef& ref);
// F3: `node` may join a prologue whose group holds `members` over an index space `index_shape`.
bool can_join_prologue(const ir::Graph& graph, const Uses& uses, const ValueMap& values, int node,
                       const std::set<int>& members, const std::vector<int64_t>& index_shape);
bool prologue_has_input(const ir::Graph& graph, const ValueMap& values,
                        const std::vector<int>& prologue, const std::vector<int64_t>& index_shape);
// F10: a convolution prologue reads one contiguous float32 input in the index space's shape
// ([batch, in_channels, input...]) — or, image_windows (the implicit GEMM's copy of x), one
// dense per image (is_dense_per_image: a cat's piece) — and otherwise only values constant over
// the spatial dims.
bool conv_prologue_fits(const ir::Graph& graph, const ValueMap& values,
                        const std::vector<int>& prologue, const std::vector<int64_t>& index_shape,
                        bool image_windows = false);
// F5: folds the library epilogue of GEMM `anchor` into `group` (library, library_epilogue, bias,
// alpha); `taken` lists nodes already claimed by other groups (prologues), which never fold.
void fold_library_epilogue(const ir::Graph& graph, const Uses& uses, const ValueMap& values,
                           int anchor, Group& group, const std::set<int>& taken = {});
// F11: sinks every plain elementwise group that one later elementwise group alone reads into it
// (fusion_sink.cc); `groups` in execution order.
void sink_elementwise_groups(const ir::Graph& graph, const Uses& uses, std::vector<Group>& groups);
// F9: `node` is a one-element value computed from inputs, params and constants only, and returned
// without being read.
bool is_detached_scalar(const ir::Graph& graph, const Uses& uses, int node);
// F6
bool must_store(const ir::Graph& graph, const Uses& uses, const ir::ValueRef& value,
                const std::set<int>& members);
// The rms_norm pattern ending after sum node `sum` (x*x or x^2 -> sum(last dim, keepdim) -> /cols
// -> +eps -> rsqrt -> x*r, or sqrt -> x/r, optionally * weight[cols]); fills the row group.
std::optional<Group> match_rms_norm(const ir::Graph& graph, const Uses& uses,
                                    const ValueMap& values, int sum);

}  // namespace stitch::plan
