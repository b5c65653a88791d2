// The Lowerer's node-making helpers and the block-wise reduction builders (lowering.h).
#include "plan/lowering.h"

#include <cmath>
#include <limits>

#include "plan/op_traits.h"

namespace stitch::plan::lowering {

using ir::DType;
using ir::Op;

std::vector<std::vector<int64_t>> reduction_blocks(const std::vector<int64_t>& shape,
                                                   const std::vector<int64_t>& dims) {
  std::vector<std::vector<int64_t>> blocks;
  int64_t previous = -1;
  for (int64_t d : dims) {
    if (shape[d] == 1) continue;
    bool adjacent = previous >= 0;
    for (int64_t between = previous + 1; adjacent && between < d; ++between)
      if (shape[between] != 1) adjacent = false;
    if (!adjacent) blocks.emplace_back();
    blocks.back().push_back(d);
    previous = d;
  }
  return blocks;
}

bool Lowerer::output_used(int out) const {
  const ir::ValueRef ref{ir::ValueRef::Kind::node, origin_, out};
  return !uses_.consumers(ref).empty() || uses_.is_graph_output(ref);
}

void Lowerer::map_output(int out, const ir::ValueRef& ref) {
  rewriter_.map_value(ir::ValueRef{ir::ValueRef::Kind::node, origin_, out}, ref);
}

std::optional<ir::ValueRef> Lowerer::tensor_arg(size_t index, std::string_view name) const {
  const ir::Arg* arg = origin().arg_or_kwarg(index, name);
  if (arg == nullptr || !arg->is_ref()) return std::nullopt;
  return rewriter_.mapped(*arg->ref());
}

ir::ValueRef Lowerer::emit(const std::string& suffix, Op op, std::vector<ir::Arg> args,
                           std::vector<ir::TensorType> outputs,
                           std::vector<std::pair<std::string, ir::Arg>> kwargs) {
  std::string id = suffix.empty() ? origin().id : origin().id + "_" + suffix;
  ir::Node node = new_node(std::move(id), op, std::move(args), std::move(outputs), origin());
  node.kwargs = std::move(kwargs);
  return rewriter_.add(std::move(node));
}

ir::ValueRef Lowerer::unary(const std::string& suffix, Op op, const ir::ValueRef& x,
                            std::vector<ir::Arg> extra) {
  const ir::TensorType& input = type(x);
  DType dtype = input.dtype;
  if (returns_bool(op))
    dtype = DType::boolean;
  else if (float_result(op) && !ir::is_floating(dtype))
    dtype = DType::float32;
  std::vector<ir::Arg> args{ref_arg(x)};
  for (ir::Arg& arg : extra)
    args.push_back(std::move(arg));
  return emit(suffix, op, std::move(args), {contiguous_type(input.shape, dtype)});
}

ir::ValueRef Lowerer::binary(const std::string& suffix, Op op, const ir::ValueRef& a,
                             const ir::Arg& b) {
  const ir::TensorType& ta = type(a);
  std::vector<int64_t> shape = ta.shape;
  PromotionInputs promotion;
  (ta.shape.empty() ? promotion.zero_dim : promotion.tensors).push_back(ta.dtype);
  if (const ir::ValueRef* ref = b.ref()) {
    const ir::TensorType& tb = type(*ref);
    shape = broadcast_shapes(shape, tb.shape).value_or(shape);
    (tb.shape.empty() ? promotion.zero_dim : promotion.tensors).push_back(tb.dtype);
  } else {
    promotion.scalars.push_back(std::holds_alternative<int64_t>(b.value) ? DType::int64
                                                                         : DType::float64);
  }
  DType dtype = result_type(promotion);
  if (returns_bool(op))
    dtype = DType::boolean;
  else if (float_result(op) && !ir::is_floating(dtype))
    dtype = DType::float32;
  return emit(suffix, op, {ref_arg(a), b}, {contiguous_type(shape, dtype)});
}

ir::ValueRef Lowerer::view(const std::string& suffix, const ir::ValueRef& x,
                           const std::vector<int64_t>& shape) {
  const ir::TensorType& input = type(x);
  if (input.shape == shape) return x;
  return emit(suffix, Op::view, {ref_arg(x), int_list_arg(shape)},
              {contiguous_type(shape, input.dtype)});
}

ir::ValueRef Lowerer::cast(const std::string& suffix, const ir::ValueRef& x, DType dtype) {
  const ir::TensorType& input = type(x);
  if (input.dtype == dtype) return x;
  return emit(suffix, Op::to_copy, {ref_arg(x)}, {contiguous_type(input.shape, dtype)},
              {{"dtype", ir::Arg{dtype}}});
}

ir::ValueRef Lowerer::full(const std::string& suffix, const std::vector<int64_t>& shape,
                           double value, DType dtype) {
  ir::Arg fill;
  if (ir::is_floating(dtype))
    fill.value = value;
  else
    fill.value = static_cast<int64_t>(value);
  return emit(suffix, Op::full, {int_list_arg(shape), fill}, {contiguous_type(shape, dtype)},
              {{"dtype", ir::Arg{dtype}}});
}

ir::ValueRef Lowerer::scalar_constant(const std::string& suffix, double value, DType dtype) {
  return emit(suffix, Op::scalar_tensor, {ir::Arg{value}}, {contiguous_type({}, dtype)},
              {{"dtype", ir::Arg{dtype}}});
}

ir::ValueRef Lowerer::reduce(const std::string& suffix, Op op, const ir::ValueRef& x,
                             const std::vector<int64_t>& dims, bool keepdim, DType dtype) {
  const std::vector<int64_t> shape = type(x).shape;
  const std::vector<int64_t> final_shape = reduced_shape(shape, dims, keepdim);
  const auto blocks = reduction_blocks(shape, dims);
  if (blocks.empty()) return cast(suffix + "_cast", view(suffix, x, final_shape), dtype);
  if (blocks.size() == 1)
    return emit(suffix, op, {ref_arg(x), int_list_arg(dims), ir::Arg{keepdim}},
                {contiguous_type(final_shape, dtype)});
  ir::ValueRef current = x;
  std::vector<int64_t> current_shape = shape;
  for (size_t b = blocks.size(); b-- > 0;) {
    current_shape = reduced_shape(current_shape, blocks[b], true);
    current = emit(suffix + "_part" + std::to_string(blocks.size() - b), op,
                   {ref_arg(current), int_list_arg(blocks[b]), ir::Arg{true}},
                   {contiguous_type(current_shape, dtype)});
  }
  return view(suffix, current, final_shape);
}

std::pair<ir::ValueRef, ir::ValueRef> Lowerer::var_mean(const std::string& suffix,
                                                        const ir::ValueRef& x,
                                                        const std::vector<int64_t>& dims,
                                                        double correction, bool keepdim) {
  const ir::TensorType input = type(x);
  const std::vector<int64_t> final_shape = reduced_shape(input.shape, dims, keepdim);
  double count = 1;
  for (int64_t d : dims)
    count *= static_cast<double>(input.shape[d]);
  const ir::Arg correction_arg = correction == std::floor(correction)
                                     ? ir::Arg{static_cast<int64_t>(correction)}
                                     : ir::Arg{correction};
  const auto blocks = reduction_blocks(input.shape, dims);
  if (blocks.empty()) {
    const double var = count - correction > 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
    return {full(suffix + "_var", final_shape, var, input.dtype),
            view(suffix + "_mean", x, final_shape)};
  }
  if (blocks.size() == 1) {
    const ir::TensorType out = contiguous_type(final_shape, input.dtype);
    const ir::ValueRef node =
        emit(suffix, Op::var_mean_correction, {ref_arg(x), int_list_arg(dims)}, {out, out},
             {{"correction", correction_arg}, {"keepdim", ir::Arg{keepdim}}});
    return {node, ir::ValueRef{ir::ValueRef::Kind::node, node.index, 1}};
  }
  // Statistics of the innermost block first, then combined over the other blocks:
  // mean = mean(m1), var = mean(v1 + (m1 - mean)^2) (each inner group has the same count).
  const std::vector<int64_t>& inner = blocks.back();
  std::vector<int64_t> rest;
  for (size_t b = 0; b + 1 < blocks.size(); ++b)
    rest.insert(rest.end(), blocks[b].begin(), blocks[b].end());
  double rest_count = 1;
  for (int64_t d : rest)
    rest_count *= static_cast<double>(input.shape[d]);
  const ir::TensorType part = contiguous_type(reduced_shape(input.shape, inner, true), input.dtype);
  const ir::ValueRef stats =
      emit(suffix + "_inner", Op::var_mean_correction, {ref_arg(x), int_list_arg(inner)},
           {part, part}, {{"correction", ir::Arg{int64_t{0}}}, {"keepdim", ir::Arg{true}}});
  const ir::ValueRef inner_var = stats;
  const ir::ValueRef inner_mean{ir::ValueRef::Kind::node, stats.index, 1};
  const ir::ValueRef mean_sum =
      reduce(suffix + "_mean_sum", Op::sum_dim_intlist, inner_mean, rest, true, input.dtype);
  const ir::ValueRef mean =
      scalar_binary(suffix + "_mean_div", Op::div_tensor, mean_sum, rest_count);
  const ir::ValueRef diff = binary(suffix + "_diff", Op::sub_tensor, inner_mean, ref_arg(mean));
  const ir::ValueRef diff_sq = binary(suffix + "_diff_sq", Op::mul_tensor, diff, ref_arg(diff));
  const ir::ValueRef total =
      binary(suffix + "_within", Op::add_tensor, inner_var, ref_arg(diff_sq));
  const ir::ValueRef var_sum =
      reduce(suffix + "_var_sum", Op::sum_dim_intlist, total, rest, true, input.dtype);
  ir::ValueRef var = scalar_binary(suffix + "_var_div", Op::div_tensor, var_sum, rest_count);
  if (correction != 0)
    var = scalar_binary(suffix + "_correction", Op::mul_tensor, var, count / (count - correction));
  return {view(suffix + "_var", var, final_shape), view(suffix + "_mean", mean, final_shape)};
}

}  // namespace stitch::plan::lowering
