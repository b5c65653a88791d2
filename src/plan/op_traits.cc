// Op traits, broadcasting and type promotion (op_traits.h).
#include "plan/op_traits.h"

#include <algorithm>

namespace stitch::plan {

using ir::DType;
using ir::Op;

bool is_elementwise(Op op) {
  const ir::OpCategory category = ir::op_category(op);
  return category == ir::OpCategory::elementwise_unary ||
         category == ir::OpCategory::elementwise_binary ||
         category == ir::OpCategory::elementwise_ternary;
}

int operand_count(Op op) {
  switch (ir::op_category(op)) {
    case ir::OpCategory::elementwise_unary:
      return 1;
    case ir::OpCategory::elementwise_binary:
      return 2;
    case ir::OpCategory::elementwise_ternary:
      return 3;
    case ir::OpCategory::creation:
      return 0;
    default:
      return -1;
  }
}

bool returns_bool(Op op) {
  switch (op) {
    case Op::eq_tensor:
    case Op::eq_scalar:
    case Op::ne_tensor:
    case Op::ne_scalar:
    case Op::lt_tensor:
    case Op::lt_scalar:
    case Op::le_tensor:
    case Op::le_scalar:
    case Op::gt_tensor:
    case Op::gt_scalar:
    case Op::ge_tensor:
    case Op::ge_scalar:
    case Op::isnan:
    case Op::isinf:
    case Op::logical_not:
    case Op::logical_and:
    case Op::logical_or:
    case Op::logical_xor:
      return true;
    default:
      return false;
  }
}

bool float_result(Op op) {
  switch (op) {
    case Op::exp:
    case Op::exp2:
    case Op::expm1:
    case Op::log:
    case Op::log1p:
    case Op::log2:
    case Op::log10:
    case Op::sqrt:
    case Op::rsqrt:
    case Op::reciprocal:
    case Op::sin:
    case Op::cos:
    case Op::tan:
    case Op::asin:
    case Op::acos:
    case Op::atan:
    case Op::sinh:
    case Op::cosh:
    case Op::tanh:
    case Op::asinh:
    case Op::acosh:
    case Op::atanh:
    case Op::erf:
    case Op::erfinv:
    case Op::sigmoid:
    case Op::gelu:
    case Op::elu:
    case Op::silu:
    case Op::mish:
    case Op::softplus:
    case Op::hardsigmoid:
    case Op::hardswish:
    case Op::atan2:
    case Op::div_tensor:
    case Op::div_scalar:
      return true;
    default:
      return false;
  }
}

int special_functions(Op op) {
  switch (op) {
    case Op::softplus:
    case Op::pow_tensor_scalar:
    case Op::pow_tensor_tensor:
    case Op::pow_scalar:
      return 2;
    case Op::mish:  // an exponential and a division, as a sigmoid (scalar_ops.cuh's op_mish)
    case Op::exp:
    case Op::exp2:
    case Op::expm1:
    case Op::log:
    case Op::log1p:
    case Op::log2:
    case Op::log10:
    case Op::sin:
    case Op::cos:
    case Op::tan:
    case Op::asin:
    case Op::acos:
    case Op::atan:
    case Op::sinh:
    case Op::cosh:
    case Op::tanh:
    case Op::asinh:
    case Op::acosh:
    case Op::atanh:
    case Op::erf:
    case Op::erfinv:
    case Op::sigmoid:
    case Op::gelu:
    case Op::elu:
    case Op::silu:
    case Op::atan2:
      return 1;
    default:
      return 0;
  }
}

std::optional<double> constant_scalar(const ir::Node& node) {
  const ir::Arg* value = nullptr;
  if (node.op == Op::scalar_tensor) {
    value = node.arg_or_kwarg(0, "s");
  } else if (node.op == Op::full) {
    const ir::Arg* size = node.arg_or_kwarg(0, "size");
    auto dims = size != nullptr ? size->as_int_list() : std::nullopt;
    if (!dims || !dims->empty()) return std::nullopt;
    value = node.arg_or_kwarg(1, "fill_value");
  }
  if (value == nullptr || node.outputs.size() != 1 || !node.outputs[0].shape.empty())
    return std::nullopt;
  return value->as_double();
}

std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> result(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return std::nullopt;
    result[i] = da == 1 ? db : da;
  }
  return result;
}

namespace {
int category(DType dtype) {
  if (dtype == DType::boolean) return 0;
  return ir::is_floating(dtype) ? 2 : 1;
}
int float_rank(DType dtype) {
  switch (dtype) {
    case DType::float64:
      return 3;
    case DType::float32:
      return 2;
    default:
      return 1;  // float16, bfloat16
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  if (category(a) == 2) {
    if (float_rank(a) != float_rank(b)) return float_rank(a) > float_rank(b) ? a : b;
    return DType::float32;  // float16 with bfloat16
  }
  // Integers: uint8 with a signed type needs the next wider signed type.
  const int size_a = ir::dtype_size(a), size_b = ir::dtype_size(b);
  if (a == DType::uint8 || b == DType::uint8) {
    const DType other = a == DType::uint8 ? b : a;
    return ir::dtype_size(other) > 1 ? other : DType::int16;
  }
  return size_a >= size_b ? a : b;
}

DType result_type(const PromotionInputs& inputs) {
  auto fold = [](const std::vector<DType>& dtypes) -> std::optional<DType> {
    if (dtypes.empty()) return std::nullopt;
    DType result = dtypes[0];
    for (DType dtype : dtypes)
      result = promote_types(result, dtype);
    return result;
  };
  std::optional<DType> result = fold(inputs.tensors);
  if (std::optional<DType> zero = fold(inputs.zero_dim)) {
    if (!result || category(*zero) > category(*result)) result = zero;
  }
  if (std::optional<DType> scalar = fold(inputs.scalars)) {
    if (!result || category(*scalar) > category(*result))
      result = category(*scalar) == 2   ? DType::float32
               : category(*scalar) == 1 ? DType::int64
                                        : DType::boolean;
  }
  return result.value_or(DType::float32);
}

std::optional<std::vector<int64_t>> reduction_dims(const ir::Arg* dims, int64_t rank) {
  std::vector<int64_t> result;
  std::optional<std::vector<int64_t>> listed;
  if (dims != nullptr && !dims->is_none()) listed = dims->as_int_list();
  if (!listed || listed->empty()) {
    for (int64_t d = 0; d < rank; ++d)
      result.push_back(d);
    return result;
  }
  for (int64_t dim : *listed) {
    const int64_t effective = std::max<int64_t>(rank, 1);
    if (dim < -effective || dim >= effective) return std::nullopt;
    if (rank == 0) continue;  // reducing a scalar over dim 0 / -1 leaves it as it is
    result.push_back(dim < 0 ? dim + rank : dim);
  }
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  return result;
}

std::vector<int64_t> reduced_shape(const std::vector<int64_t>& shape,
                                   const std::vector<int64_t>& dims, bool keepdim) {
  std::vector<int64_t> result;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
    if (!reduced) {
      result.push_back(shape[d]);
    } else if (keepdim) {
      result.push_back(1);
    }
  }
  return result;
}

int64_t int_arg(const ir::Node& node, size_t index, std::string_view name, int64_t fallback) {
  const ir::Arg* arg = node.arg_or_kwarg(index, name);
  if (arg == nullptr || arg->is_none()) return fallback;
  return arg->as_int().value_or(fallback);
}

double double_arg(const ir::Node& node, size_t index, std::string_view name, double fallback) {
  const ir::Arg* arg = node.arg_or_kwarg(index, name);
  if (arg == nullptr || arg->is_none()) return fallback;
  return arg->as_double().value_or(fallback);
}

bool bool_arg(const ir::Node& node, size_t index, std::string_view name, bool fallback) {
  const ir::Arg* arg = node.arg_or_kwarg(index, name);
  if (arg == nullptr || arg->is_none()) return fallback;
  return arg->as_bool().value_or(fallback);
}

}  // namespace stitch::plan
