// Operand-layout needs of the kernel families (kernel_layouts.h).
#include "plan/kernel_layouts.h"

#include <algorithm>

#include "plan/access.h"
#include "plan/op_traits.h"

namespace stitch::plan {

using ir::Op;

bool is_primitive_reduction(Op op) {
  switch (op) {
    case Op::sum_dim_intlist:
    case Op::amax:
    case Op::amin:
    case Op::prod_dim_int:
    case Op::argmax:
    case Op::argmin:
    case Op::max_dim:
    case Op::min_dim:
    case Op::var_mean_correction:
    case Op::logsumexp:
      return true;
    default:
      return false;
  }
}

ReduceOp reduce_op_of(Op op) {
  switch (op) {
    case Op::amax:
      return ReduceOp::max;
    case Op::amin:
      return ReduceOp::min;
    case Op::prod_dim_int:
      return ReduceOp::prod;
    case Op::argmax:
    case Op::max_dim:
      return ReduceOp::argmax;
    case Op::argmin:
    case Op::min_dim:
      return ReduceOp::argmin;
    case Op::var_mean_correction:
      return ReduceOp::mean_var;
    case Op::logsumexp:
      return ReduceOp::logsumexp;
    default:
      return ReduceOp::sum;
  }
}

bool is_scan(Op op) {
  return op == Op::cumsum || op == Op::cumprod;
}

ScanOp scan_op_of(Op op) {
  return op == Op::cumprod ? ScanOp::prod : ScanOp::sum;
}

std::optional<ScanGeometry> scan_geometry(const ir::Graph& graph, const ir::Node& node) {
  if (!is_scan(node.op)) return std::nullopt;
  const ir::Arg* self = node.arg_or_kwarg(0, "self");
  if (self == nullptr || !self->is_ref()) return std::nullopt;
  const std::vector<int64_t>& shape = graph.type_of(*self->ref()).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const auto dim = wrap_dim(int_arg(node, 1, "dim", 0), rank);
  if (!dim) return std::nullopt;
  ScanGeometry geometry;
  geometry.dim = *dim;
  if (rank == 0) return geometry;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < *dim) geometry.outer *= shape[d];
    if (d > *dim) geometry.inner *= shape[d];
  }
  geometry.length = shape[*dim];
  return geometry;
}

std::optional<GatherGeometry> gather_geometry(const ir::Graph& graph, const ir::Node& node) {
  if (node.op != Op::index_select && node.op != Op::index_tensor && node.op != Op::gather)
    return std::nullopt;
  const ir::Arg* self = node.arg_or_kwarg(0, "self");
  if (self == nullptr || !self->is_ref()) return std::nullopt;
  GatherGeometry geometry;
  geometry.input = *self->ref();
  const std::vector<int64_t>& shape = graph.type_of(geometry.input).shape;
  const ir::Arg* index = nullptr;
  if (node.op == Op::index_select || node.op == Op::gather) {
    const auto dim = wrap_dim(int_arg(node, 1, "dim", 0), static_cast<int64_t>(shape.size()));
    if (!dim) return std::nullopt;
    geometry.dim = *dim;
    index = node.arg_or_kwarg(2, "index");
    geometry.per_element = node.op == Op::gather;
  } else {
    const ir::Arg* indices = node.arg_or_kwarg(1, "indices");
    if (indices == nullptr || indices->list() == nullptr || indices->list()->size() != 1)
      return std::nullopt;
    index = &indices->list()->front();
  }
  if (index == nullptr || !index->is_ref() || shape.empty()) return std::nullopt;
  geometry.index = *index->ref();
  const ir::TensorType& index_type = graph.type_of(geometry.index);
  if (index_type.dtype != ir::DType::int64 && index_type.dtype != ir::DType::int32)
    return std::nullopt;  // a bool mask selects, it does not gather
  if (node.op == Op::index_select && index_type.rank() > 1) return std::nullopt;
  if (geometry.per_element) {  // the index's sizes are x's but along dim (smaller: not covered)
    if (index_type.shape.size() != shape.size()) return std::nullopt;
    for (size_t d = 0; d < shape.size(); ++d)
      if (static_cast<int64_t>(d) != geometry.dim && index_type.shape[d] != shape[d])
        return std::nullopt;
  }
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < geometry.dim) geometry.outer *= shape[d];
    if (d > geometry.dim) geometry.inner *= shape[d];
  }
  geometry.size = shape[geometry.dim];
  geometry.count = geometry.per_element ? index_type.shape[geometry.dim] : index_type.numel();
  return geometry;
}

bool scan_reverse(const ir::Node& node) {
  const ir::Arg* arg = node.kwarg("reverse");
  return arg != nullptr && arg->as_bool().value_or(false);
}

bool scan_exclusive(const ir::Node& node) {
  const ir::Arg* arg = node.kwarg("exclusive");
  return arg != nullptr && arg->as_bool().value_or(false);
}

std::vector<int64_t> reduced_dims(const ir::Graph& graph, const ir::Node& node) {
  const ir::Arg* self = node.arg_or_kwarg(0, "self");
  const int64_t rank = self != nullptr && self->is_ref() ? graph.type_of(*self->ref()).rank() : 0;
  return reduction_dims(node.arg_or_kwarg(1, "dim"), rank).value_or(std::vector<int64_t>{});
}

bool reduction_keepdim(const ir::Node& node) {
  return bool_arg(node, 2, "keepdim", false);
}

std::optional<ReduceGeometry> reduce_geometry(const std::vector<int64_t>& shape,
                                              const std::vector<int64_t>& dims) {
  std::vector<int64_t> real;
  for (int64_t d : dims)
    if (shape[d] != 1) real.push_back(d);
  ReduceGeometry geometry;
  int64_t numel = 1;
  for (int64_t size : shape)
    numel *= size;
  if (real.empty()) {
    geometry.outer = numel;
    return geometry;
  }
  for (int64_t d = real.front(); d <= real.back(); ++d)
    if (shape[d] != 1 && std::find(real.begin(), real.end(), d) == real.end()) return std::nullopt;
  for (int64_t d = 0; d < real.front(); ++d)
    geometry.outer *= shape[d];
  for (int64_t d : real)
    geometry.reduce *= shape[d];
  for (size_t d = real.back() + 1; d < shape.size(); ++d)
    geometry.inner *= shape[d];
  return geometry;
}

std::optional<ReduceGeometry> reduce_geometry(const ir::Graph& graph, const ir::Node& node) {
  const ir::Arg* self = node.arg_or_kwarg(0, "self");
  if (self == nullptr || !self->is_ref()) return std::nullopt;
  return reduce_geometry(graph.type_of(*self->ref()).shape, reduced_dims(graph, node));
}

std::optional<RowGeometry> row_geometry(const ir::Graph& graph, const ir::Node& node) {
  const ir::Arg* self = node.arg_or_kwarg(0, node.op == Op::native_layer_norm ? "input" : "self");
  if (self == nullptr || !self->is_ref()) return std::nullopt;
  const std::vector<int64_t>& shape = graph.type_of(*self->ref()).shape;
  int64_t numel = 1;
  for (int64_t size : shape)
    numel *= size;
  RowGeometry geometry;
  if (node.op == Op::softmax || node.op == Op::log_softmax) {
    auto dim = wrap_dim(int_arg(node, 1, "dim", -1), static_cast<int64_t>(shape.size()));
    if (!dim) return std::nullopt;
    if (shape.empty()) return RowGeometry{1, 1};
    for (size_t d = *dim + 1; d < shape.size(); ++d)
      if (shape[d] != 1) return std::nullopt;
    geometry.cols = shape[*dim];
  } else if (node.op == Op::native_layer_norm) {
    const ir::Arg* normalized = node.arg_or_kwarg(1, "normalized_shape");
    auto dims = normalized != nullptr ? normalized->as_int_list() : std::nullopt;
    if (!dims || dims->size() > shape.size()) return std::nullopt;
    for (int64_t size : *dims)
      geometry.cols *= size;
  } else {
    return std::nullopt;
  }
  geometry.rows = geometry.cols == 0 ? 0 : numel / geometry.cols;
  return geometry;
}

std::optional<Access> row_access(const Access& input, const RowGeometry& geometry) {
  auto access = reshape_access(input, {geometry.rows, geometry.cols});
  if (!access) return std::nullopt;
  if (geometry.cols > 1 && access->strides[1] != 1) return std::nullopt;
  if (geometry.cols == 1) access->strides[1] = 1;
  return access;
}

std::optional<Access> matrix_access(const Access& operand) {
  if (operand.shape.size() == 3) return operand;
  if (operand.shape.size() != 2) return std::nullopt;
  Access matrix = operand;
  matrix.shape.insert(matrix.shape.begin(), 1);
  matrix.strides.insert(matrix.strides.begin(), 0);
  return matrix;
}

bool matrix_layout_ok(const Access& matrix) {
  const int64_t rows = matrix.shape[1], cols = matrix.shape[2];
  const int64_t row_stride = matrix.strides[1], col_stride = matrix.strides[2];
  const bool row_major = (cols == 1 || col_stride == 1) && (rows == 1 || row_stride >= cols);
  const bool col_major = (rows == 1 || row_stride == 1) && (cols == 1 || col_stride >= rows);
  // A flipped batch (negative stride) is no strided batch cuBLASLt takes.
  const bool batch_ok = matrix.shape[0] == 1 || matrix.strides[0] >= 0;
  return (row_major || col_major) && batch_ok;
}

}  // namespace stitch::plan
