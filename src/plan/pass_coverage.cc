// Pass "coverage": the op families the built-in Coder covers (kernels/ + the emitter), and a clear
// refusal naming node and op for anything else. An LLM Coder may still implement a refused graph.
//
// Covered: elementwise ops, creation ops with defined contents, views (flip included),
// clone/copy/cat/stack, mm/addmm/bmm/baddbmm, the reductions (not any/nll_loss), softmax,
// layer/batch/group norm, max/avg/adaptive pools and nearest/bilinear upsampling (plan/pooling.h),
// convolutions (1-3 spatial dims, transposed and grouped included), scaled_dot_product_attention
// where attention_pattern.h's kernel runs it (no dropout, head dims up to 128), constant pads
// (folded into a convolution, or cats of fills), cumsum/cumprod with float32 results (ScanSpec),
// index_select, index.Tensor with one integer index tensor and torch.gather whose index matches
// its input outside the dim, on float32 data (GatherSpec),
// float32 LSTM/GRU/RNN layers without training-mode dropout or projections (RecurrentSpec,
// plan/recurrent.h). Not covered: scatters, masks as indices, reflect/replicate padding, sorting,
// random ops left in the graph.
#include <fmt/format.h>

#include "plan/attention_pattern.h"
#include "plan/conv_geometry.h"
#include "plan/graph_edit.h"
#include "plan/kernel_layouts.h"
#include "plan/lowering.h"
#include "plan/op_traits.h"
#include "plan/passes.h"
#include "plan/pooling.h"
#include "plan/recurrent.h"

namespace stitch::plan {

std::string uncovered_reason(const ir::Graph& graph, const ir::Node& node) {
  using ir::Op;
  if (node.op == Op::opaque)
    return fmt::format("{} is not covered by the built-in Coder yet",
                       ir::short_op_name(node.op_name));
  if (is_elementwise(node.op)) return "";
  const std::string_view name = ir::short_op_name(ir::op_name(node.op));
  switch (ir::op_category(node.op)) {
    case ir::OpCategory::view:
    case ir::OpCategory::matmul:
    case ir::OpCategory::normalization:
      return "";
    case ir::OpCategory::reduction:
      if (node.op == Op::any || node.op == Op::any_dim || node.op == Op::any_dims ||
          node.op == Op::nll_loss_forward)
        return fmt::format("{} is not covered by the built-in Coder yet", name);
      return "";
    case ir::OpCategory::copy:
      if (node.op == Op::clone || node.op == Op::copy || node.op == Op::cat || node.op == Op::stack)
        return "";
      if (node.op == Op::constant_pad_nd) return "";  // folds into a conv, or cats of fills
      if (node.op == Op::index_select || node.op == Op::index_tensor || node.op == Op::gather) {
        if (!gather_geometry(graph, node))
          return node.op == Op::gather
                     ? "gather whose integer index differs from its input's sizes outside the dim "
                       "is not covered by the built-in Coder yet"
                     : fmt::format(
                           "{} other than one integer index tensor along one dim is not "
                           "covered by the built-in Coder yet",
                           name);
        if (node.outputs[0].dtype != ir::DType::float32)
          return fmt::format("{} of {} data is not covered by the built-in Coder yet", name,
                             ir::dtype_name(node.outputs[0].dtype));
        return "";
      }
      return fmt::format("{} is not covered by the built-in Coder yet", name);
    case ir::OpCategory::creation:
      if (node.op == Op::empty_memory_format || node.op == Op::empty_strided)
        return fmt::format("{} (uninitialized memory) is not covered by the built-in Coder yet",
                           name);
      return "";
    case ir::OpCategory::convolution:
      if (!conv_geometry(graph, node))
        return "convolution with args that do not match its shapes (or over 3 spatial dims) is "
               "not covered by the built-in Coder";
      if (node.outputs[0].dtype != ir::DType::float32)
        return "convolution on non-float32 data is not covered by the built-in Coder yet";
      return "";
    case ir::OpCategory::pooling:
      // Pools whose windows tile the input become reductions; the others direct pooling kernels.
      if (pool_params(graph, node)) return "";
      return fmt::format("pooling ({}) with these arguments is not covered by the built-in Coder",
                         name);
    case ir::OpCategory::scan:
      if (!scan_geometry(graph, node))
        return fmt::format("scan ({}) with a dim out of range is not covered", name);
      if (node.outputs[0].dtype != ir::DType::float32)
        return fmt::format(
            "scan ({}) with {} results is not covered by the built-in Coder yet "
            "(it accumulates in float32)",
            name, ir::dtype_name(node.outputs[0].dtype));
      return "";
    case ir::OpCategory::random:
      return fmt::format("random op {} inside the graph is not covered by the built-in Coder yet",
                         name);
    case ir::OpCategory::recurrent:
      if (auto spec = recurrent_geometry(graph, node); !spec.ok())
        return fmt::format("recurrent layer ({}): {}", name, spec.error().message);
      return "";
    case ir::OpCategory::attention:
      if (node.op == Op::scaled_dot_product_attention) return sdpa_unsupported_reason(graph, node);
      return fmt::format("{} is not covered by the built-in Coder yet", name);
    default:
      return fmt::format("{} is not covered by the built-in Coder yet", name);
  }
}

Status check_coverage(const ir::Graph& graph) {
  for (const ir::Node& node : graph.nodes) {
    std::string reason = uncovered_reason(graph, node);
    if (!reason.empty()) return make_error("node '{}' ({}): {}", node.id, node.op_name, reason);
  }
  return {};
}

}  // namespace stitch::plan
