// Internal to the lowering pass (pass_lowering.cc, lower_norms.cc): a Lowerer emits the primitive
// nodes that replace one composite node, with ids derived from it ("<id>_<suffix>"), contiguous
// output types, and the composite's module path.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/graph_edit.h"
#include "plan/passes.h"

namespace stitch::plan::lowering {

class Lowerer {
 public:
  Lowerer(const ir::Graph& source, const PlanOptions& options)
      : source_(source), options_(options), rewriter_(source), uses_(source) {}

  const ir::Graph& source() const { return source_; }
  const PlanOptions& options() const { return options_; }
  const Uses& uses() const { return uses_; }
  GraphRewriter& rewriter() { return rewriter_; }
  const ir::TensorType& type(const ir::ValueRef& ref) const {
    return rewriter_.graph().type_of(ref);
  }

  // The node being lowered: new nodes take their id prefix and module from it.
  void begin(int index) { origin_ = index; }
  const ir::Node& origin() const { return source_.nodes[origin_]; }
  int origin_index() const { return origin_; }
  // Source output `out` of the node being lowered is used (by a node or as a graph output).
  bool output_used(int out) const;
  // Maps output `out` of the node being lowered to `ref`.
  void map_output(int out, const ir::ValueRef& ref);
  // Source node `index` (after the one being lowered) is folded into its lowering: its outputs are
  // mapped here, and the pass skips it.
  void fold_later(int index, int out, const ir::ValueRef& ref) {
    rewriter_.map_value(ir::ValueRef{ir::ValueRef::Kind::node, index, out}, ref);
    folded_.push_back(index);
  }
  bool folded(int index) const {
    return std::find(folded_.begin(), folded_.end(), index) != folded_.end();
  }
  // The node's tensor argument, remapped into the new graph.
  std::optional<ir::ValueRef> tensor_arg(size_t index, std::string_view name) const;

  ir::ValueRef emit(const std::string& suffix, ir::Op op, std::vector<ir::Arg> args,
                    std::vector<ir::TensorType> outputs,
                    std::vector<std::pair<std::string, ir::Arg>> kwargs = {});
  // Elementwise helpers: the result type follows broadcasting; dtype is the first tensor's.
  ir::ValueRef unary(const std::string& suffix, ir::Op op, const ir::ValueRef& x,
                     std::vector<ir::Arg> extra = {});
  ir::ValueRef binary(const std::string& suffix, ir::Op op, const ir::ValueRef& a,
                      const ir::Arg& b);
  ir::ValueRef scalar_binary(const std::string& suffix, ir::Op op, const ir::ValueRef& a,
                             double b) {
    return binary(suffix, op, a, ir::Arg{b});
  }
  ir::ValueRef view(const std::string& suffix, const ir::ValueRef& x,
                    const std::vector<int64_t>& shape);
  ir::ValueRef cast(const std::string& suffix, const ir::ValueRef& x, ir::DType dtype);
  ir::ValueRef full(const std::string& suffix, const std::vector<int64_t>& shape, double value,
                    ir::DType dtype);
  ir::ValueRef scalar_constant(const std::string& suffix, double value, ir::DType dtype);

  // An associative reduction (sum_dim_intlist, amax, amin, logsumexp) over any dims: size-1 dims
  // are free, and dims that are not one adjacent block reduce block by block (innermost first),
  // keepdim in between. The result has `keepdim`'s shape and `dtype`.
  ir::ValueRef reduce(const std::string& suffix, ir::Op op, const ir::ValueRef& x,
                      const std::vector<int64_t>& dims, bool keepdim, ir::DType dtype);
  // var and mean over any dims (population variance scaled by n / (n - correction)); blocks that
  // are not adjacent combine by the law of total variance. Shapes as for keepdim.
  std::pair<ir::ValueRef, ir::ValueRef> var_mean(const std::string& suffix, const ir::ValueRef& x,
                                                 const std::vector<int64_t>& dims,
                                                 double correction, bool keepdim);

  // Values an earlier node's lowering computed that a later one may reuse as they are (the new
  // graph's values never change), by a key the lowering makes (e.g. "channel_stats:" + the input's
  // value_key): batch norms of DenseNet's growing cats share each piece's statistics.
  std::map<std::string, std::vector<ir::ValueRef>>& reusable() { return reusable_; }

 private:
  const ir::Graph& source_;
  const PlanOptions& options_;
  GraphRewriter rewriter_;
  Uses uses_;
  int origin_ = 0;
  std::vector<int> folded_;
  std::map<std::string, std::vector<ir::ValueRef>> reusable_;
};

// Splits reduced dims (sorted) into maximal blocks adjacent in the shape once size-1 dims are
// ignored; size-1 dims themselves are dropped.
std::vector<std::vector<int64_t>> reduction_blocks(const std::vector<int64_t>& shape,
                                                   const std::vector<int64_t>& dims);

// Each returns true when it lowered the node (its outputs mapped), false to keep it as it is.
Result<bool> lower_softmax(Lowerer& lowerer);
Result<bool> lower_layer_norm(Lowerer& lowerer);
Result<bool> lower_batch_norm(Lowerer& lowerer);
Result<bool> lower_group_norm(Lowerer& lowerer);

}  // namespace stitch::plan::lowering

namespace stitch::plan {
// max_pool2d_with_indices (indices unused) / avg_pool2d with windows that tile the input: stride ==
// kernel, no padding, no dilation, no ceil mode, no divisor override. Such a pool is a view
// [..., H/kh, kh, W/kw, kw] and a max / mean over the window dims.
bool is_tiling_pool(const ir::Graph& graph, const Uses& uses, int node);
}  // namespace stitch::plan

namespace stitch::plan {
// Flips over the scanned dim of a scan whose result only they read: flip node -> scan node
// (lower_scan.cc). Such a scan is dropped and its flip lowered by lower_flipped_scan.
std::map<int, int> find_flipped_scans(const ir::Graph& graph, const Uses& uses);
}  // namespace stitch::plan

namespace stitch::plan::lowering {
// The flip of a scan's result (find_flipped_scans): one scan of the flipped input, reversed.
Result<bool> lower_flipped_scan(Lowerer& lowerer, int scan_index);
// Tiling pools become reductions, global average pools a mean; false keeps the others for a direct
// pooling kernel (PoolSpec).
Result<bool> lower_pool(Lowerer& lowerer);
// convolution with a bias: the convolution without it, then an add of the bias (lower_conv.cc).
Result<bool> lower_convolution(Lowerer& lowerer);
// constant_pad_nd that does not fold into a convolution: cats of fills (lower_conv.cc).
Result<bool> lower_constant_pad(Lowerer& lowerer);
// bmm of a sequence-major view by one weight expanded over the batch (nn.MultiheadAttention's
// batch_first in-projection): one mm over the rows in memory order, viewed back, a following
// [n] bias add folded in as addmm; false leaves the bmm (lower_bmm.cc).
Result<bool> lower_bmm_rows(Lowerer& lowerer);
// mm / addmm whose product is viewed and permuted over its rows afterwards: the GEMM on A's rows
// in that order, the permute gone; false leaves the GEMM (lower_bmm.cc).
Result<bool> lower_gemm_row_order(Lowerer& lowerer);
}  // namespace stitch::plan::lowering
