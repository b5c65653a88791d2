// Lowering of convolutions: the bias leaves the convolution and becomes an add of a [C, 1, ...]
// view of it, which fusion puts into the convolution's epilogue with what follows (activations,
// residual adds, scale/shift): one elementwise pass after the cuDNN call.
#include "plan/conv_geometry.h"
#include "plan/lowering.h"

namespace stitch::plan::lowering {

Result<bool> lower_convolution(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  if (!conv_geometry(lowerer.source(), node))
    return make_error("convolution args and shapes do not agree (or more than 3 spatial dims)");
  if (node.args[2].is_none()) return false;
  std::vector<ir::Arg> args;
  for (const ir::Arg& arg : node.args)
    args.push_back(lowerer.rewriter().remap(arg));
  const ir::ValueRef bias = *args[2].ref();
  args[2] = ir::Arg{};
  const ir::TensorType& out = node.outputs[0];
  const ir::ValueRef conv = lowerer.emit("", ir::Op::convolution, std::move(args),
                                         {contiguous_type(out.shape, out.dtype)});
  // [C] → [C, 1, ...]: broadcast over the spatial dims of [N, C, ...].
  std::vector<int64_t> column(out.shape.size() - 1, 1);
  column[0] = out.shape[1];
  const ir::ValueRef channel_bias = lowerer.view("bias_view", bias, column);
  lowerer.map_output(0, lowerer.binary("bias", ir::Op::add_tensor, conv, ref_arg(channel_bias)));
  return true;
}

}  // namespace stitch::plan::lowering
