// Lowering of pools whose windows tile the input (is_tiling_pool): a view that splits each spatial
// dim into (windows, window) and a reduction over the window dims — KernelBench's "MaxPool" on a
// [N, 1, 1, F] view of a GEMM output is one row reduction. Overlapping or padded windows are
// refused by the coverage pass.
#include "plan/lowering.h"
#include "plan/op_traits.h"

namespace stitch::plan {

namespace {

struct Window {
  std::vector<int64_t> kernel, stride, padding, dilation;
};

std::vector<int64_t> list_or(const ir::Node& node, size_t index, std::string_view name,
                             std::vector<int64_t> fallback) {
  const ir::Arg* arg = node.arg_or_kwarg(index, name);
  if (arg == nullptr || arg->is_none()) return fallback;
  auto values = arg->as_int_list();
  if (!values || values->empty()) return fallback;
  if (values->size() == 1) values->push_back(values->front());  // [k] means k x k
  return *values;
}

}  // namespace

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

Result<bool> lower_tiling_pool(Lowerer& lowerer) {
  const ir::Node& node = lowerer.origin();
  if (!is_tiling_pool(lowerer.source(), lowerer.uses(), lowerer.origin_index()))
    return make_error("only pools whose windows tile the input are covered");
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
  std::vector<int64_t> windows(shape.begin(), shape.end() - 2);
  windows.insert(windows.end(),
                 {shape[rank - 2] / kernel[0], kernel[0], shape[rank - 1] / kernel[1], kernel[1]});
  const ir::ValueRef split = lowerer.view("windows", x, windows);
  const std::vector<int64_t> dims{static_cast<int64_t>(rank) - 1, static_cast<int64_t>(rank) + 1};
  const ir::DType dtype = node.outputs[0].dtype;
  if (node.op == ir::Op::max_pool2d_with_indices) {
    lowerer.map_output(0, lowerer.reduce("", ir::Op::amax, split, dims, false, dtype));
  } else {
    const ir::ValueRef sum =
        lowerer.reduce("sum", ir::Op::sum_dim_intlist, split, dims, false, dtype);
    lowerer.map_output(0, lowerer.scalar_binary("", ir::Op::div_tensor, sum,
                                                static_cast<double>(kernel[0] * kernel[1])));
  }
  return true;
}

}  // namespace lowering
}  // namespace stitch::plan
