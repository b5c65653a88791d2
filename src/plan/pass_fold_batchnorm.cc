// Pass "fold-batchnorm": a BatchNorm with eval semantics (an eval-mode capture, or any under
// --inference) that directly follows a convolution whose output nothing else reads folds into that
// convolution's weight and bias. With
// scale = weight / sqrt(running_var + eps) and shift = bias - running_mean · scale (per output
// channel), conv(x, w, b) · scale + shift = conv(x, w · scale, b · scale + shift): the new weight
// and bias read only params, so they are computed once at init, and the plan keeps the
// convolution and its bias epilogue with no normalisation or affine subtask.
#include "plan/graph_edit.h"
#include "plan/passes.h"

namespace stitch::plan {
namespace {

using ir::Op;

// What a foldable batch norm reads; its args by overload (lower_norms.cc's BatchNormArgs).
struct FoldedNorm {
  int conv = -1;
  std::optional<ir::ValueRef> weight, bias;
  ir::ValueRef mean, var;
  double eps = 1e-5;
};

std::optional<ir::ValueRef> ref_at(const ir::Node& node, size_t index) {
  if (index >= node.args.size() || !node.args[index].is_ref()) return std::nullopt;
  return *node.args[index].ref();
}

// The fold applies to a batch norm with running statistics whose input is output 0 of a forward
// (not transposed) convolution read by nothing else, and whose saved statistics are unused.
std::optional<FoldedNorm> foldable(const ir::Graph& graph, const Uses& uses, int index,
                                   bool inference) {
  const ir::Node& node = graph.nodes[index];
  const bool no_training = node.op == Op::batch_norm_no_training;
  if (!no_training && node.op != Op::batch_norm_functional && node.op != Op::native_batch_norm)
    return std::nullopt;
  const ir::Arg* training = no_training ? nullptr : node.arg_or_kwarg(5, "training");
  if (!inference && !no_training && (!training || training->as_bool().value_or(true)))
    return std::nullopt;  // batch statistics
  const auto x = ref_at(node, 0);
  if (!x || x->kind != ir::ValueRef::Kind::node || x->out != 0) return std::nullopt;
  const ir::Node& conv = graph.nodes[x->index];
  if (conv.op != Op::convolution || conv.args.size() < 9 || !conv.args[6].as_bool() ||
      *conv.args[6].as_bool() || !ref_at(conv, 1))
    return std::nullopt;
  if (uses.consumers(*x).size() != 1 || uses.is_graph_output(*x)) return std::nullopt;
  for (size_t out = 1; out < node.outputs.size(); ++out)
    if (!uses.consumers(node_value(index, static_cast<int>(out))).empty() ||
        uses.is_graph_output(node_value(index, static_cast<int>(out))))
      return std::nullopt;
  const auto mean = ref_at(node, 3), var = ref_at(node, 4);
  if (!mean || !var) return std::nullopt;
  const ir::Arg* eps = node.arg_or_kwarg(no_training ? 6 : 7, "eps");
  FoldedNorm folded{x->index, ref_at(node, 1), ref_at(node, 2), *mean, *var, 1e-5};
  if (eps && eps->as_double()) folded.eps = *eps->as_double();
  return folded;
}

// Emits the folded weight and bias (param-only nodes) and the convolution reading them.
void emit_folded_conv(GraphRewriter& rewriter, const ir::Graph& graph, const FoldedNorm& norm) {
  const ir::Node& conv = graph.nodes[norm.conv];
  const ir::TensorType& w_type = graph.type_of(*ref_at(conv, 1));
  const int64_t channels = w_type.shape[0];
  const ir::TensorType channel = contiguous_type({channels}, w_type.dtype);
  auto add = [&](const std::string& suffix, Op op, std::vector<ir::Arg> args,
                 const ir::TensorType& type) {
    return rewriter.add(new_node(conv.id + "_bn_" + suffix, op, std::move(args), {type}, conv));
  };
  auto mapped = [&](const ir::ValueRef& ref) { return ref_arg(rewriter.mapped(ref)); };
  ir::ValueRef scale =
      add("var_eps", Op::add_tensor, {mapped(norm.var), ir::Arg{norm.eps}}, channel);
  scale = add("rstd", Op::rsqrt, {ref_arg(scale)}, channel);
  if (norm.weight)
    scale = add("scale", Op::mul_tensor, {ref_arg(scale), mapped(*norm.weight)}, channel);
  ir::ValueRef shift =
      add("mean_scaled", Op::mul_tensor, {mapped(norm.mean), ref_arg(scale)}, channel);
  shift = add("neg_shift", Op::neg, {ref_arg(shift)}, channel);
  if (norm.bias)
    shift = add("shift", Op::add_tensor, {ref_arg(shift), mapped(*norm.bias)}, channel);
  std::vector<int64_t> column(w_type.shape.size(), 1);
  column[0] = channels;
  const ir::ValueRef scale_column =
      add("scale_column", Op::view, {ref_arg(scale), int_list_arg(column)},
          contiguous_type(column, w_type.dtype));
  const ir::ValueRef weight =
      add("weight", Op::mul_tensor, {mapped(*ref_at(conv, 1)), ref_arg(scale_column)},
          contiguous_type(w_type.shape, w_type.dtype));
  ir::ValueRef bias = shift;
  if (const auto conv_bias = ref_at(conv, 2)) {
    const ir::ValueRef scaled =
        add("bias_scaled", Op::mul_tensor, {mapped(*conv_bias), ref_arg(scale)}, channel);
    bias = add("bias", Op::add_tensor, {ref_arg(scaled), ref_arg(shift)}, channel);
  }
  ir::Node folded = rewriter.copy_node(norm.conv);
  folded.args[1] = ref_arg(weight);
  folded.args[2] = ref_arg(bias);
  rewriter.emit(norm.conv, std::move(folded));
}

}  // namespace

ir::Graph fold_batch_norm_into_conv(const ir::Graph& graph, const PlanOptions& options) {
  const Uses uses(graph);
  std::vector<std::optional<FoldedNorm>> norm_of_conv(graph.nodes.size());
  std::vector<bool> folded_norm(graph.nodes.size(), false);
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (auto norm = foldable(graph, uses, static_cast<int>(i), options.inference)) {
      norm_of_conv[norm->conv] = *norm;
      folded_norm[i] = true;
    }
  GraphRewriter rewriter(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const int index = static_cast<int>(i);
    if (norm_of_conv[i]) {
      emit_folded_conv(rewriter, graph, *norm_of_conv[i]);
    } else if (folded_norm[i]) {  // the convolution already computes its output
      rewriter.map_value(node_value(index), rewriter.mapped(*ref_at(graph.nodes[i], 0)));
    } else {
      rewriter.keep(index);
    }
  }
  return std::move(rewriter).finish();
}

}  // namespace stitch::plan
