// Lowering of convolutions. The bias leaves the convolution and becomes an add of a [C, 1, ...]
// view of it, which fusion puts into the epilogue with what follows (activations, residual adds,
// scale/shift): one elementwise pass after the library call. A pointwise convolution (1x1...,
// stride 1, no padding, one group, not transposed, no pad folded into it) is a batched GEMM on
// views, no copies: y[n] = W[K, C] · x[n][C, S] with W broadcast over the batch (stride 0) — on
// the fp32 track it can then run as split-precision 3xTF32 on tensor cores instead of
// strict-FP32 cuDNN. Not, on the tensor-core tracks, one with a bias whose input a subtask
// writes: it stays a convolution, whose kernels add the bias (and what follows) as they store, into
// a cat's window where it has one, and read and write channels-last regions. The GEMM cannot:
// cuBLASLt's bias epilogue runs along the rows of its column-major result, the NCHW product's
// positions, and a row-major result (CUBLASLT_ORDER_ROW, rows = channels) it does not support
// for FP32 data (its heuristic returned CUBLAS_STATUS_NOT_SUPPORTED on an H100, CUDA 13,
// 2026-12-06), so the bias takes a pass over the output after it. A graph input stays NCHW, which
// the GEMM reads as it is and the convolution kernels (or cuDNN) would first transpose: on an H100
// (tf32, against reduce-overhead in the same run) GoogleNet's inception module, four 1x1
// convolutions of its 480-channel input, ran at 0.78x as convolutions, 0.86x as GEMMs; SqueezeNet,
// whose 1x1 convolutions read its own subtasks' results, at 0.77x as convolutions, 0.69x as GEMMs.
// So does a value computed from graph inputs with no convolution on the way (channels-last
// regions start at convolutions): the inception module's max pool of its input, which cuDNN's
// pool projection converted to NHWC in 0.69 ms and convolved in 0.36 ms (H100, 2026-12-07).
// A constant pad no convolution absorbs is a cat of fills around its input, one dim at a time
// (negative pads crop: a slice); cat_placement puts the nested cats, and the input when its
// producer can store there, in the one padded buffer.
#include <set>

#include "plan/conv_geometry.h"
#include "plan/graph_edit.h"
#include "plan/lowering.h"
#include "plan/op_traits.h"

namespace stitch::plan::lowering {

namespace {

bool all_equal(const std::vector<int64_t>& values, int64_t value) {
  for (int64_t v : values)
    if (v != value) return false;
  return true;
}

bool is_pointwise(const Lowerer& lowerer, const ConvGeometry& g) {
  return !g.transposed && g.groups == 1 && all_equal(g.kernel, 1) && all_equal(g.stride, 1) &&
         all_equal(g.padding, 0) &&
         !foldable_pad(lowerer.source(), lowerer.uses(), lowerer.origin_index());
}

// The value is computed from graph inputs and params with no convolution on the way: it is stored
// NCHW, as the inputs are.
bool computed_without_convolution(const ir::Graph& graph, const ir::ValueRef& value) {
  std::vector<int> pending;
  std::set<int> seen;
  if (value.kind == ir::ValueRef::Kind::node) pending.push_back(value.index);
  while (!pending.empty()) {
    const int index = pending.back();
    pending.pop_back();
    if (!seen.insert(index).second) continue;
    if (graph.nodes[index].op == ir::Op::convolution) return false;
    for_each_ref(graph.nodes[index], [&](const ir::ValueRef& ref) {
      if (ref.kind == ir::ValueRef::Kind::node) pending.push_back(ref.index);
    });
  }
  return true;
}

// The pointwise convolution runs as a GEMM (see the top of this file).
bool lowers_to_gemm(const Lowerer& lowerer, const ConvGeometry& g) {
  if (!is_pointwise(lowerer, g)) return false;
  const ir::Node& node = lowerer.origin();
  const bool has_bias = !node.args[2].is_none();
  return !has_bias || lowerer.options().tensor_math == TensorMath::fp32 ||
         (node.args[0].is_ref() &&
          computed_without_convolution(lowerer.source(), *node.args[0].ref()));
}

// bmm(expand(W as [1, K, C], [N, K, C]), x as [N, C, S]) viewed as the convolution's output.
ir::ValueRef pointwise_gemm(Lowerer& lowerer, const ConvGeometry& g, const ir::ValueRef& x,
                            const ir::ValueRef& w, const ir::TensorType& out) {
  int64_t positions = 1;
  for (int64_t size : g.input)
    positions *= size;
  const ir::ValueRef columns = lowerer.view("columns", x, {g.batch, g.in_channels, positions});
  const ir::ValueRef matrix = lowerer.view("matrix", w, {1, g.out_channels, g.in_channels});
  const std::vector<int64_t> batched{g.batch, g.out_channels, g.in_channels};
  const ir::ValueRef weights =
      lowerer.emit("weights", ir::Op::expand, {ref_arg(matrix), int_list_arg(batched)},
                   {contiguous_type(batched, out.dtype)});
  const ir::ValueRef product =
      lowerer.emit("gemm", ir::Op::bmm, {ref_arg(weights), ref_arg(columns)},
                   {contiguous_type({g.batch, g.out_channels, positions}, out.dtype)});
  return lowerer.view("", product, out.shape);
}

}  // namespace

Result<bool> lower_convolution(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const auto g = conv_geometry(lowerer.source(), node);
  if (!g) return make_error("convolution args and shapes do not agree (or over 3 spatial dims)");
  const bool as_gemm = lowers_to_gemm(lowerer, *g);
  if (node.args[2].is_none() && !as_gemm) return false;
  const ir::TensorType& out = node.outputs[0];
  const ir::ValueRef x = *lowerer.tensor_arg(0, "input"), w = *lowerer.tensor_arg(1, "weight");
  ir::ValueRef result;
  if (as_gemm) {
    result = pointwise_gemm(lowerer, *g, x, w, out);
  } else {
    std::vector<ir::Arg> args;
    for (const ir::Arg& arg : node.args)
      args.push_back(lowerer.rewriter().remap(arg));
    args[2] = ir::Arg{};  // the bias is added below
    result = lowerer.emit("", ir::Op::convolution, std::move(args),
                          {contiguous_type(out.shape, out.dtype)});
  }
  if (const auto bias = lowerer.tensor_arg(2, "bias")) {
    // [C] → [C, 1, ...]: broadcast over the spatial dims of [N, C, ...].
    std::vector<int64_t> column(out.shape.size() - 1, 1);
    column[0] = out.shape[1];
    const ir::ValueRef channel_bias = lowerer.view("bias_view", *bias, column);
    result = lowerer.binary("bias", ir::Op::add_tensor, result, ref_arg(channel_bias));
  }
  lowerer.map_output(0, result);
  return true;
}

Result<bool> lower_constant_pad(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  if (pad_folds_into_conv(lowerer.source(), lowerer.uses(), lowerer.origin_index())) return false;
  const auto input = lowerer.tensor_arg(0, "self");
  const ir::Arg* pad_arg = node.arg_or_kwarg(1, "pad");
  const auto pads = pad_arg ? pad_arg->as_int_list() : std::nullopt;
  if (!input || !pads || pads->size() % 2 != 0) return make_error("pad arguments not understood");
  const double value = double_arg(node, 2, "value", 0);
  const ir::DType dtype = node.outputs[0].dtype;
  ir::ValueRef current = *input;
  const auto rank = static_cast<int64_t>(lowerer.type(current).shape.size());
  if (static_cast<int64_t>(pads->size()) > 2 * rank) return make_error("more pads than dims");
  for (size_t k = 0; 2 * k < pads->size(); ++k) {  // pairs from the last dim
    const int64_t dim = rank - 1 - static_cast<int64_t>(k);
    int64_t before = (*pads)[2 * k], after = (*pads)[2 * k + 1];
    std::vector<int64_t> shape = lowerer.type(current).shape;
    if (before < 0 || after < 0) {
      const int64_t start = std::max<int64_t>(-before, 0);
      const int64_t end = shape[dim] - std::max<int64_t>(-after, 0);
      shape[dim] = end - start;
      current = lowerer.emit(fmt::format("crop{}", dim), ir::Op::slice_tensor,
                             {ref_arg(current), ir::Arg{dim}, ir::Arg{start}, ir::Arg{end}},
                             {contiguous_type(shape, dtype)});
      before = std::max<int64_t>(before, 0), after = std::max<int64_t>(after, 0);
    }
    if (before == 0 && after == 0) continue;
    ir::ArgList pieces;
    for (const int64_t width : {before, int64_t{-1}, after}) {
      if (width == 0) continue;
      std::vector<int64_t> fill_shape = shape;
      fill_shape[dim] = width;
      pieces.push_back(
          ref_arg(width < 0 ? current
                            : lowerer.full(fmt::format("fill{}", dim), fill_shape, value, dtype)));
    }
    shape[dim] += before + after;
    current =
        lowerer.emit(fmt::format("pad{}", dim), ir::Op::cat,
                     {ir::Arg{std::move(pieces)}, ir::Arg{dim}}, {contiguous_type(shape, dtype)});
  }
  lowerer.map_output(0, current);
  return true;
}

}  // namespace stitch::plan::lowering
