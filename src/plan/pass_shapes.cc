// Pass "shapes": recomputes the output shape and dtype of every op the Planner covers from its
// arguments (torch's broadcasting, type promotion, reduction and view rules) and compares them with
// the captured types. A mismatch means the graph is not what the Planner thinks it is — refusing is
// better than planning wrong buffers. Strides are not compared: the Planner chooses its own
// layouts.
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/access.h"
#include "plan/op_traits.h"
#include "plan/passes.h"

namespace stitch::plan {

namespace {

using ir::DType;
using ir::Op;

struct ShapeDtype {
  std::vector<int64_t> shape;
  DType dtype = DType::float32;
};
using Inferred = std::vector<std::optional<ShapeDtype>>;  // per output; nullopt: not checked

const ir::TensorType* tensor(const ir::Graph& graph, const ir::Node& node, size_t index,
                             std::string_view name) {
  const ir::Arg* arg = node.arg_or_kwarg(index, name);
  if (arg == nullptr || !arg->is_ref()) return nullptr;
  return &graph.type_of(*arg->ref());
}

std::optional<DType> dtype_kwarg(const ir::Node& node) {
  const ir::Arg* arg = node.kwarg("dtype");
  return arg != nullptr ? arg->as_dtype() : std::nullopt;
}

DType number_dtype(const ir::Arg& arg) {
  if (std::holds_alternative<bool>(arg.value)) return DType::boolean;
  if (std::holds_alternative<int64_t>(arg.value)) return DType::int64;
  return DType::float64;
}

Result<Inferred> infer_elementwise(const ir::Graph& graph, const ir::Node& node) {
  const int count = operand_count(node.op);
  PromotionInputs promotion;
  std::vector<int64_t> shape;
  for (int i = 0; i < count; ++i) {
    if (static_cast<size_t>(i) >= node.args.size()) break;
    const ir::Arg& arg = node.args[i];
    if (const ir::ValueRef* ref = arg.ref()) {
      const ir::TensorType& type = graph.type_of(*ref);
      auto merged = broadcast_shapes(shape, type.shape);
      if (!merged)
        return make_error("operand shapes [{}] and [{}] do not broadcast", fmt::join(shape, ", "),
                          fmt::join(type.shape, ", "));
      shape = *merged;
      // where's condition does not take part in promotion.
      if (node.op == Op::where_self && i == 0) continue;
      (type.shape.empty() ? promotion.zero_dim : promotion.tensors).push_back(type.dtype);
    } else if (arg.as_double() || arg.as_bool()) {
      promotion.scalars.push_back(number_dtype(arg));
    }
  }
  // Scalar bounds and exponents take part in promotion (clamp(int, 0.5) is float).
  auto extra_scalar = [&](size_t index, std::string_view name) {
    const ir::Arg* arg = node.arg_or_kwarg(index, name);
    if (arg != nullptr && (arg->as_double() || arg->as_bool()))
      promotion.scalars.push_back(number_dtype(*arg));
  };
  if (node.op == Op::clamp) extra_scalar(1, "min"), extra_scalar(2, "max");
  if (node.op == Op::pow_tensor_scalar) extra_scalar(1, "exponent");
  DType dtype = result_type(promotion);
  if (returns_bool(node.op)) {
    dtype = DType::boolean;
  } else if (node.op == Op::to_copy) {
    dtype = dtype_kwarg(node).value_or(promotion.tensors.empty() ? dtype : promotion.tensors[0]);
  } else if (float_result(node.op) && !ir::is_floating(dtype)) {
    dtype = DType::float32;
  }
  return Inferred{ShapeDtype{shape, dtype}};
}

Result<Inferred> infer_reduction(const ir::Graph& graph, const ir::Node& node) {
  const ir::TensorType* self = tensor(graph, node, 0, "self");
  if (self == nullptr) return make_error("first argument is not a tensor");
  const int64_t rank = self->rank();
  const ir::Arg* dims_arg = nullptr;
  bool keepdim = false;
  switch (node.op) {
    case Op::sum:
    case Op::mean:
    case Op::prod:
    case Op::max:
    case Op::min:
    case Op::any:
      break;  // every dim
    case Op::linalg_vector_norm:
      dims_arg = node.arg_or_kwarg(2, "dim");
      keepdim = bool_arg(node, 3, "keepdim", false);
      break;
    default:
      dims_arg = node.arg_or_kwarg(1, "dim");
      keepdim = bool_arg(node, 2, "keepdim", false);
      break;
  }
  auto dims = reduction_dims(dims_arg, rank);
  if (!dims) return make_error("reduction dim out of range for rank {}", rank);
  const std::vector<int64_t> shape = reduced_shape(self->shape, *dims, keepdim);
  DType dtype = self->dtype;
  switch (node.op) {
    case Op::sum:
    case Op::sum_dim_intlist:
    case Op::prod:
    case Op::prod_dim_int:
      if (!ir::is_floating(dtype)) dtype = DType::int64;
      break;
    case Op::argmax:
    case Op::argmin:
      dtype = DType::int64;
      break;
    case Op::any:
    case Op::any_dim:
    case Op::any_dims:
      dtype = DType::boolean;
      break;
    case Op::logsumexp:
      if (!ir::is_floating(dtype)) dtype = DType::float32;
      break;
    default:
      break;
  }
  if (std::optional<DType> requested = dtype_kwarg(node)) dtype = *requested;
  if (node.op == Op::max_dim || node.op == Op::min_dim)
    return Inferred{ShapeDtype{shape, dtype}, ShapeDtype{shape, DType::int64}};
  if (node.op == Op::var_mean_correction)
    return Inferred{ShapeDtype{shape, dtype}, ShapeDtype{shape, dtype}};
  return Inferred{ShapeDtype{shape, dtype}};
}

Result<Inferred> infer_matmul(const ir::Graph& graph, const ir::Node& node) {
  const bool has_self = node.op == Op::addmm || node.op == Op::baddbmm;
  const ir::TensorType* a = tensor(graph, node, has_self ? 1 : 0, has_self ? "mat1" : "self");
  const ir::TensorType* b = tensor(graph, node, has_self ? 2 : 1, has_self ? "mat2" : "mat2");
  if (node.op == Op::baddbmm) {
    a = tensor(graph, node, 1, "batch1");
    b = tensor(graph, node, 2, "batch2");
  }
  if (a == nullptr || b == nullptr) return make_error("matrix operands are not tensors");
  const size_t rank = node.op == Op::mm || node.op == Op::addmm ? 2 : 3;
  if (a->shape.size() != rank || b->shape.size() != rank)
    return make_error("operands must have rank {}", rank);
  if (a->shape[rank - 1] != b->shape[rank - 2])
    return make_error("inner dims differ ({} vs {})", a->shape[rank - 1], b->shape[rank - 2]);
  if (rank == 3 && a->shape[0] != b->shape[0])
    return make_error("batch dims differ ({} vs {})", a->shape[0], b->shape[0]);
  std::vector<int64_t> shape = {a->shape[rank - 2], b->shape[rank - 1]};
  if (rank == 3) shape.insert(shape.begin(), a->shape[0]);
  if (has_self) {
    const ir::TensorType* self = tensor(graph, node, 0, "self");
    if (self == nullptr || !broadcast_shapes(self->shape, shape) ||
        *broadcast_shapes(self->shape, shape) != shape)
      return make_error("the added tensor does not broadcast to [{}]", fmt::join(shape, ", "));
  }
  return Inferred{ShapeDtype{shape, promote_types(a->dtype, b->dtype)}};
}

Result<Inferred> infer_view(const ir::Graph& graph, const ir::Node& node) {
  const ir::TensorType* self = tensor(graph, node, 0, "self");
  if (self == nullptr) return make_error("first argument is not a tensor");
  // Any strides do for shape inference; the input's own are the natural choice.
  const Access input{ir::ValueRef{}, 0, self->shape, self->strides};
  Inferred inferred;
  for (size_t out = 0; out < node.outputs.size(); ++out) {
    STITCH_ASSIGN_OR_RETURN(std::optional<Access> access,
                            view_access(graph, node, static_cast<int>(out), input));
    // Captured strides may not allow the view (a reshape of a permuted tensor is a copy in
    // eager mode); the shape is what matters here: redo it contiguously.
    if (!access) {
      const Access contiguous{ir::ValueRef{}, 0, self->shape, ir::contiguous_strides(self->shape)};
      STITCH_ASSIGN_OR_RETURN(access, view_access(graph, node, static_cast<int>(out), contiguous));
    }
    if (!access)
      return make_error("the view's sizes do not fit the input [{}]", fmt::join(self->shape, ", "));
    inferred.push_back(ShapeDtype{access->shape, self->dtype});
  }
  return inferred;
}

Result<Inferred> infer_normalization(const ir::Graph& graph, const ir::Node& node) {
  const ir::TensorType* input = tensor(
      graph, node, 0, node.op == Op::softmax || node.op == Op::log_softmax ? "self" : "input");
  if (input == nullptr) return make_error("first argument is not a tensor");
  Inferred inferred{ShapeDtype{input->shape, input->dtype}};
  for (size_t out = 1; out < node.outputs.size(); ++out)
    inferred.push_back(std::nullopt);
  return inferred;
}

Result<Inferred> infer_creation(const ir::Graph& graph, const ir::Node& node) {
  switch (node.op) {
    case Op::full: {
      const ir::Arg* size = node.arg_or_kwarg(0, "size");
      auto shape = size != nullptr ? size->as_int_list() : std::nullopt;
      const ir::Arg* fill = node.arg_or_kwarg(1, "fill_value");
      if (!shape || fill == nullptr) return make_error("size or fill value missing");
      DType dtype = number_dtype(*fill) == DType::float64 ? DType::float32 : number_dtype(*fill);
      return Inferred{ShapeDtype{*shape, dtype_kwarg(node).value_or(dtype)}};
    }
    case Op::full_like:
    case Op::zeros_like:
    case Op::ones_like: {
      const ir::TensorType* self = tensor(graph, node, 0, "self");
      if (self == nullptr) return make_error("first argument is not a tensor");
      return Inferred{ShapeDtype{self->shape, dtype_kwarg(node).value_or(self->dtype)}};
    }
    case Op::scalar_tensor:
      return Inferred{ShapeDtype{{}, dtype_kwarg(node).value_or(DType::float32)}};
    case Op::arange_start_step: {
      const ir::Arg* start = node.arg_or_kwarg(0, "start");
      const ir::Arg* end = node.arg_or_kwarg(1, "end");
      if (start == nullptr || end == nullptr || !start->as_double() || !end->as_double())
        return make_error("start or end missing");
      const double step = double_arg(node, 2, "step", 1.0);
      const bool all_int =
          start->as_int() && end->as_int() &&
          (node.arg_or_kwarg(2, "step") == nullptr || node.arg_or_kwarg(2, "step")->as_int());
      const double count = std::ceil((*end->as_double() - *start->as_double()) / step);
      return Inferred{
          ShapeDtype{{static_cast<int64_t>(std::max(count, 0.0))},
                     dtype_kwarg(node).value_or(all_int ? DType::int64 : DType::float32)}};
    }
    default:
      return Inferred{};
  }
}

Result<Inferred> infer_copy(const ir::Graph& graph, const ir::Node& node) {
  if (node.op == Op::clone) {
    const ir::TensorType* self = tensor(graph, node, 0, "self");
    if (self == nullptr) return make_error("first argument is not a tensor");
    return Inferred{ShapeDtype{self->shape, self->dtype}};
  }
  if (node.op == Op::copy) {
    const ir::TensorType* self = tensor(graph, node, 0, "self");
    if (self == nullptr) return make_error("first argument is not a tensor");
    return Inferred{ShapeDtype{self->shape, self->dtype}};
  }
  if (node.op == Op::cat) {
    const ir::Arg* tensors = node.arg_or_kwarg(0, "tensors");
    if (tensors == nullptr || tensors->list() == nullptr) return make_error("no tensor list");
    std::vector<const ir::TensorType*> pieces;
    for (const ir::Arg& item : *tensors->list())
      if (item.is_ref()) pieces.push_back(&graph.type_of(*item.ref()));
    // torch skips 1-D empty tensors in cat (a legacy rule).
    std::erase_if(pieces,
                  [](const ir::TensorType* t) { return t->shape == std::vector<int64_t>{0}; });
    if (pieces.empty()) return Inferred{};
    auto dim = wrap_dim(int_arg(node, 1, "dim", 0), pieces[0]->rank());
    if (!dim) return make_error("cat dim out of range");
    std::vector<int64_t> shape = pieces[0]->shape;
    DType dtype = pieces[0]->dtype;
    shape[*dim] = 0;
    for (const ir::TensorType* piece : pieces) {
      if (piece->rank() != static_cast<int>(shape.size()))
        return make_error("cat pieces have different ranks");
      shape[*dim] += piece->shape[*dim];
      dtype = promote_types(dtype, piece->dtype);
    }
    return Inferred{ShapeDtype{shape, dtype}};
  }
  return Inferred{};
}

Result<Inferred> infer(const ir::Graph& graph, const ir::Node& node) {
  if (is_elementwise(node.op)) {
    if (node.op == Op::clamp_tensor || node.op == Op::prelu_kernel) return Inferred{};
    return infer_elementwise(graph, node);
  }
  switch (ir::op_category(node.op)) {
    case ir::OpCategory::reduction:
      if (node.op == Op::nll_loss_forward) return Inferred{};
      return infer_reduction(graph, node);
    case ir::OpCategory::matmul:
      return infer_matmul(graph, node);
    case ir::OpCategory::view:
      return infer_view(graph, node);
    case ir::OpCategory::normalization:
      return infer_normalization(graph, node);
    case ir::OpCategory::creation:
      return infer_creation(graph, node);
    case ir::OpCategory::copy:
      return infer_copy(graph, node);
    default:
      return Inferred{};  // not covered: the coverage pass refuses it, or it is dead
  }
}

}  // namespace

Result<ir::Graph> check_shapes(const ir::Graph& graph, const PlanOptions& options) {
  for (const ir::Node& node : graph.nodes) {
    const std::string where = fmt::format("node '{}' ({})", node.id, node.op_name);
    auto inferred = infer(graph, node);
    if (!inferred.ok()) return inferred.error().with_context(where);
    if (!inferred->empty() && inferred->size() != node.outputs.size())
      return make_error("{}: has {} outputs, the op gives {}", where, node.outputs.size(),
                        inferred->size());
    for (size_t out = 0; out < inferred->size(); ++out) {
      const std::optional<ShapeDtype>& expected = (*inferred)[out];
      if (!expected) continue;
      const ir::TensorType& captured = node.outputs[out];
      if (captured.shape != expected->shape || captured.dtype != expected->dtype)
        return make_error("{}: output {} is captured as [{}] {} but its arguments give [{}] {}",
                          where, out, fmt::join(captured.shape, ", "),
                          ir::dtype_name(captured.dtype), fmt::join(expected->shape, ", "),
                          ir::dtype_name(expected->dtype));
    }
  }
  return graph;
}

}  // namespace stitch::plan
