// Lowering of convolutions. The bias leaves the convolution and becomes an add of a [C, 1, ...]
// view of it, which fusion puts into the epilogue with what follows (activations, residual adds,
// scale/shift): one elementwise pass after the library call. A pointwise convolution (1x1...,
// stride 1, no padding, one group, not transposed, no pad folded into it) is a batched GEMM on
// views, no copies: y[n] = W[K, C] · x[n][C, S] with W broadcast over the batch (stride 0) — on
// the fp32 track it can then run as split-precision 3xTF32 on tensor cores instead of
// strict-FP32 cuDNN.
#include "plan/conv_geometry.h"
#include "plan/lowering.h"

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

// bmm(expand(W as [1, K, C], [N, K, C]), x as [N, C, S]) viewed as the convolution's output.
ir::ValueRef pointwise_gemm(Lowerer& lowerer, const ConvGeometry& g, const ir::ValueRef& x,
                            const ir::ValueRef& w, const ir::TensorType& out) {
  int64_t positions = 1;
  for (int64_t size : g.input)
    positions *= size;
  const ir::ValueRef columns = lowerer.view("columns", x, {g.batch, g.in_channels, positions});
  const ir::ValueRef matrix = lowerer.view("matrix", w, {1, g.out_channels, g.in_channels});
  const std::vector<int64_t> batched{g.batch, g.out_channels, g.in_channels};
  const ir::ValueRef weights = lowerer.emit("weights", ir::Op::expand,
                                            {ref_arg(matrix), int_list_arg(batched)},
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
  const bool pointwise = is_pointwise(lowerer, *g);
  if (node.args[2].is_none() && !pointwise) return false;
  const ir::TensorType& out = node.outputs[0];
  const ir::ValueRef x = *lowerer.tensor_arg(0, "input"), w = *lowerer.tensor_arg(1, "weight");
  ir::ValueRef result;
  if (pointwise) {
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

}  // namespace stitch::plan::lowering
