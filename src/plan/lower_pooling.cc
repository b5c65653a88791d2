// Lowering of pools whose windows tile the input (is_tiling_pool): views that split each spatial
// dim into (windows, window) and move the window dims last, then one reduction over them — read
// straight from the input (the reduction kernel unravels a strided input), no copy and no
// intermediate. KernelBench's "MaxPool" on a [N, 1, 1, F] view of a GEMM output is one row
// reduction. Other pools are direct pooling kernels (PoolSpec).
#include <algorithm>

#include "plan/lowering.h"
#include "plan/op_traits.h"
#include "plan/pooling.h"

namespace stitch::plan {

namespace {

// A per-dim list arg; [k] (or a bare k) means k in every one of the `rank` dims.
std::vector<int64_t> list_or(const ir::Node& node, size_t index, std::string_view name,
                             std::vector<int64_t> fallback, size_t rank = 2) {
  const ir::Arg* arg = node.arg_or_kwarg(index, name);
  if (arg == nullptr || arg->is_none()) return fallback;
  auto values = arg->as_int_list();
  if (!values) {
    auto single = arg->as_int();
    if (!single) return fallback;
    values = std::vector<int64_t>{*single};
  }
  if (values->empty()) return fallback;
  if (values->size() == 1) values->resize(rank, values->front());
  return *values;
}

int spatial_rank(ir::Op op) {
  switch (op) {
    case ir::Op::avg_pool1d:
      return 1;
    case ir::Op::max_pool3d_with_indices:
    case ir::Op::avg_pool3d:
    case ir::Op::adaptive_avg_pool3d:
      return 3;
    default:
      return 2;
  }
}

// upsample_nearest2d.vec(input, output_size, scale_factors) and
// upsample_bilinear2d.vec(input, output_size, align_corners, scale_factors): the source step per
// output position as PyTorch computes it in float — (in - 1) / (out - 1) with align_corners
// (0 for one output), else 1 / scale_factor when given, else in / out.
bool upsample_params(const ir::Node& node, PoolParams& p) {
  const bool bilinear = node.op == ir::Op::upsample_bilinear2d_vec;
  p.op = bilinear ? PoolOp::bilinear : PoolOp::nearest;
  p.align_corners = bilinear && bool_arg(node, 2, "align_corners", false);
  const ir::Arg* factors = node.arg_or_kwarg(bilinear ? 3 : 2, "scale_factors");
  std::vector<double> given;
  if (factors != nullptr && factors->is_list())
    for (const ir::Arg& item : *factors->list())
      given.push_back(item.as_double().value_or(0));
  if (!given.empty() && given.size() != p.in.size()) return false;
  for (size_t d = 0; d < p.in.size(); ++d) {
    const auto in = static_cast<float>(p.in[d]), out = static_cast<float>(p.out[d]);
    float scale = 0;
    if (p.align_corners)
      scale = p.out[d] > 1 ? (in - 1) / (out - 1) : 0.0f;
    else
      scale = !given.empty() && given[d] > 0 ? static_cast<float>(1.0 / given[d]) : in / out;
    p.scale.push_back(scale);
  }
  return true;
}

}  // namespace

std::optional<PoolParams> pool_params(const ir::Graph& graph, const ir::Node& node) {
  using ir::Op;
  if (ir::op_category(node.op) != ir::OpCategory::pooling || node.outputs.empty()) return {};
  const ir::Arg* self = node.arg_or_kwarg(0, "self");
  if (self == nullptr || !self->is_ref()) return {};
  PoolParams p;
  p.spatial = spatial_rank(node.op);
  const size_t rank = static_cast<size_t>(p.spatial);
  const std::vector<int64_t>& in_shape = graph.type_of(*self->ref()).shape;
  const std::vector<int64_t>& out_shape = node.outputs[0].shape;
  if (in_shape.size() <= rank || out_shape.size() != in_shape.size()) return {};
  p.in.assign(in_shape.end() - p.spatial, in_shape.end());
  p.out.assign(out_shape.end() - p.spatial, out_shape.end());
  switch (node.op) {
    case Op::upsample_nearest2d_vec:
    case Op::upsample_bilinear2d_vec:
      if (!upsample_params(node, p)) return std::nullopt;
      return p;
    case Op::adaptive_avg_pool2d:
    case Op::adaptive_avg_pool3d:
      p.op = PoolOp::adaptive_avg;
      return p;
    case Op::adaptive_max_pool2d:
      p.op = PoolOp::adaptive_max;
      return p;
    case Op::max_pool2d_with_indices:
    case Op::max_pool3d_with_indices:
      p.op = PoolOp::max;
      p.dilation = list_or(node, 4, "dilation", std::vector<int64_t>(rank, 1), rank);
      p.ceil_mode = bool_arg(node, 5, "ceil_mode", false);
      break;
    default: {
      p.op = PoolOp::avg;
      p.ceil_mode = bool_arg(node, 4, "ceil_mode", false);
      p.count_include_pad = bool_arg(node, 5, "count_include_pad", true);
      const ir::Arg* divisor = node.arg_or_kwarg(6, "divisor_override");
      if (divisor != nullptr && !divisor->is_none()) p.divisor = divisor->as_int().value_or(0);
      p.dilation.assign(rank, 1);
    }
  }
  p.kernel = list_or(node, 1, "kernel_size", {}, rank);
  p.stride = list_or(node, 2, "stride", p.kernel, rank);
  p.padding = list_or(node, 3, "padding", std::vector<int64_t>(rank, 0), rank);
  for (const auto* list : {&p.kernel, &p.stride, &p.padding, &p.dilation})
    if (list->size() != rank) return {};
  for (size_t d = 0; d < rank; ++d)
    if (p.kernel[d] < 1 || p.stride[d] < 1 || p.dilation[d] < 1 || p.padding[d] < 0) return {};
  return p;
}

bool is_tiling_pool(const ir::Graph& graph, const Uses& uses, int index) {
  const ir::Node& node = graph.nodes[index];
  const bool max = node.op == ir::Op::max_pool2d_with_indices;
  if (!max && node.op != ir::Op::avg_pool2d) return false;
  const ir::Arg* self = node.arg_or_kwarg(0, "self");
  if (self == nullptr || !self->is_ref() || graph.type_of(*self->ref()).rank() < 3) return false;
  const std::vector<int64_t> kernel = list_or(node, 1, "kernel_size", {});
  if (kernel.size() != 2 || kernel[0] <= 0 || kernel[1] <= 0) return false;
  if (list_or(node, 2, "stride", kernel) != kernel) return false;
  if (list_or(node, 3, "padding", {0, 0}) != std::vector<int64_t>{0, 0}) return false;
  if (max) {
    if (list_or(node, 4, "dilation", {1, 1}) != std::vector<int64_t>{1, 1}) return false;
    if (bool_arg(node, 5, "ceil_mode", false)) return false;
    const ir::ValueRef indices{ir::ValueRef::Kind::node, index, 1};
    if (!uses.consumers(indices).empty() || uses.is_graph_output(indices)) return false;
  } else {
    if (bool_arg(node, 4, "ceil_mode", false)) return false;
    const ir::Arg* divisor = node.arg_or_kwarg(6, "divisor_override");
    if (divisor != nullptr && !divisor->is_none()) return false;
  }
  return true;
}

namespace lowering {

// Global average pooling (every output spatial size 1): a mean over the spatial dims, which the
// reduction kernel splits across the GPU where one thread per output would not.
Result<bool> lower_global_avg_pool(Lowerer& lowerer, const PoolParams& params) {
  ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  const std::vector<int64_t> shape = lowerer.type(x).shape;
  std::vector<int64_t> dims;
  double count = 1;
  for (size_t d = shape.size() - params.in.size(); d < shape.size(); ++d) {
    dims.push_back(static_cast<int64_t>(d));
    count *= static_cast<double>(shape[d]);
  }
  const ir::DType dtype = lowerer.origin().outputs[0].dtype;
  const ir::ValueRef sum =
      lowerer.reduce("sum", ir::Op::sum_dim_intlist, x, dims, /*keepdim=*/true, dtype);
  lowerer.map_output(0, lowerer.scalar_binary("", ir::Op::div_tensor, sum, count));
  return true;
}

Result<bool> lower_pool(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  const auto params = pool_params(lowerer.source(), node);
  if (params && params->op == PoolOp::adaptive_avg &&
      std::all_of(params->out.begin(), params->out.end(), [](int64_t s) { return s == 1; }))
    return lower_global_avg_pool(lowerer, *params);
  if (!is_tiling_pool(lowerer.source(), lowerer.uses(), lowerer.origin_index()))
    return false;  // a direct pooling kernel (PoolSpec)
  const std::vector<int64_t> kernel = list_or(node, 1, "kernel_size", {});
  ir::ValueRef x = *lowerer.tensor_arg(0, "self");
  std::vector<int64_t> shape = lowerer.type(x).shape;
  const size_t rank = shape.size();
  // Windows that do not fit at the end are dropped (floor mode): slice them off first.
  for (size_t s = 0; s < 2; ++s) {
    const int64_t dim = static_cast<int64_t>(rank - 2 + s);
    const int64_t kept = shape[dim] / kernel[s] * kernel[s];
    if (kept == shape[dim]) continue;
    shape[dim] = kept;
    x = lowerer.emit(s == 0 ? "rows" : "cols", ir::Op::slice_tensor,
                     {ref_arg(x), ir::Arg{dim}, ir::Arg{int64_t{0}}, ir::Arg{kept}},
                     {contiguous_type(shape, lowerer.type(x).dtype)});
  }
  // [..., H/kh, kh, W/kw, kw] -> [..., H/kh, W/kw, kh, kw]: the window dims are one block.
  std::vector<int64_t> windows(shape.begin(), shape.end() - 2);
  windows.insert(windows.end(),
                 {shape[rank - 2] / kernel[0], kernel[0], shape[rank - 1] / kernel[1], kernel[1]});
  const ir::ValueRef split = lowerer.view("windows", x, windows);
  std::vector<int64_t> order(rank + 2);
  for (size_t d = 0; d < order.size(); ++d)
    order[d] = static_cast<int64_t>(d);
  std::swap(order[rank - 1], order[rank]);
  std::vector<int64_t> permuted = windows;
  std::swap(permuted[rank - 1], permuted[rank]);
  const ir::ValueRef last =
      lowerer.emit("window_last", ir::Op::permute, {ref_arg(split), int_list_arg(order)},
                   {contiguous_type(permuted, lowerer.type(x).dtype)});
  const std::vector<int64_t> dims{static_cast<int64_t>(rank), static_cast<int64_t>(rank) + 1};
  const ir::DType dtype = node.outputs[0].dtype;
  if (node.op == ir::Op::max_pool2d_with_indices) {
    lowerer.map_output(0, lowerer.reduce("", ir::Op::amax, last, dims, false, dtype));
  } else {
    const ir::ValueRef sum =
        lowerer.reduce("sum", ir::Op::sum_dim_intlist, last, dims, false, dtype);
    lowerer.map_output(0, lowerer.scalar_binary("", ir::Op::div_tensor, sum,
                                                static_cast<double>(kernel[0] * kernel[1])));
  }
  return true;
}

}  // namespace lowering
}  // namespace stitch::plan
