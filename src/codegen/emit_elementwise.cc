// One emit_<op> per elementwise op: the CUDA expression PyTorch's float kernel computes. Scalar
// arguments come from the node (ATen schema positions and names); tensor operands arrive rendered.
// Functions of kernels/scalar_ops.cuh carry the semantics an operator alone would get wrong (NaN
// propagation, Python remainder, activation thresholds).
#include "codegen/emit_elementwise.h"

#include <cmath>
#include <functional>
#include <map>

#include <fmt/args.h>
#include <fmt/format.h>

namespace stitch::codegen {
namespace {

using ir::Op;
using Operands = std::vector<std::string>;

// Reads scalar argument `index` / `name` of the node, with a default when absent or None.
struct Args {
  const ir::Node& node;

  std::optional<double> number(size_t index, std::string_view name) const {
    const ir::Arg* arg = node.arg_or_kwarg(index, name);
    if (arg == nullptr || arg->is_none()) return std::nullopt;
    if (auto b = arg->as_bool()) return *b ? 1.0 : 0.0;
    return arg->as_double();
  }
  Result<double> number_or(size_t index, std::string_view name, double fallback) const {
    const ir::Arg* arg = node.arg_or_kwarg(index, name);
    if (arg == nullptr || arg->is_none()) return fallback;
    if (auto value = number(index, name)) return *value;
    return make_error("node '{}' ({}): argument {} is not a number", node.id, node.op_name, name);
  }
  std::string text(size_t index, std::string_view name) const {
    const ir::Arg* arg = node.arg_or_kwarg(index, name);
    if (arg == nullptr || arg->as_string() == nullptr) return "";
    return *arg->as_string();
  }
  bool is_tensor(size_t index, std::string_view name) const {
    const ir::Arg* arg = node.arg_or_kwarg(index, name);
    return arg != nullptr && arg->is_ref();
  }
};

using Emit = std::function<Result<std::string>(const Args&, const Operands&)>;

Result<std::string> need(const Args& args, const Operands& x, size_t count) {
  if (x.size() != count)
    return make_error("node '{}' ({}): expected {} tensor operand(s), got {}", args.node.id,
                      args.node.op_name, count, x.size());
  return std::string();
}

#define NEED(count) STITCH_TRY(need(args, x, count))

// The scalar operand of a Tensor-Scalar binary op: the Planner passes numbers in operand position
// as Kind::scalar (plan.h), so x has two entries; a one-entry x reads it from the node.
Result<std::string> scalar_other(const Args& args, const Operands& x, size_t index,
                                 std::string_view name) {
  if (x.size() == 2) return x[1];
  STITCH_TRY(need(args, x, 1));
  STITCH_ASSIGN_OR_RETURN(double value, args.number_or(index, name, NAN));
  return float_literal(value);
}

std::string call(std::string_view fn, const Operands& x) {
  std::string joined;
  for (const auto& operand : x)
    joined += (joined.empty() ? "" : ", ") + operand;
  return fmt::format("{}({})", fn, joined);
}

Emit unary_call(std::string_view fn) {
  return [fn](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    return call(fn, x);
  };
}

Emit binary_call(std::string_view fn) {
  return [fn](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(2);
    return call(fn, x);
  };
}

// `count` operands put into `pattern` ("{0}" is the first; "{}" takes them in order).
Emit operand_pattern(size_t count, std::string_view pattern) {
  return [count, pattern](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(count);
    fmt::dynamic_format_arg_store<fmt::format_context> operands;
    for (const std::string& operand : x)
      operands.push_back(operand);
    return fmt::vformat(pattern, operands);
  };
}

Emit binary_infix(std::string_view op) {
  return [op](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(2);
    return fmt::format("({} {} {})", x[0], op, x[1]);
  };
}

Emit compare_tensor(std::string_view op) {
  return [op](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(2);
    return fmt::format("op_bool({} {} {})", x[0], op, x[1]);
  };
}

Emit compare_scalar(std::string_view op) {
  return [op](const Args& args, const Operands& x) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string other, scalar_other(args, x, 1, "other"));
    return fmt::format("op_bool({} {} {})", x[0], op, other);
  };
}

Emit logical(std::string_view op) {
  return [op](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(2);
    return fmt::format("op_bool(({} != 0.0f) {} ({} != 0.0f))", x[0], op, x[1]);
  };
}

Result<std::string> scalar_other_operand(const Args& args, const Operands& x) {
  return scalar_other(args, x, 1, "other");
}

// add/sub with alpha: a op alpha*b.
Emit add_like(std::string_view op, bool scalar_other) {
  return [op, scalar_other](const Args& args, const Operands& x) -> Result<std::string> {
    if (!scalar_other) NEED(2);
    STITCH_ASSIGN_OR_RETURN(double alpha, args.number_or(2, "alpha", 1.0));
    std::string other = x.size() > 1 ? x[1] : "";
    if (scalar_other) {
      STITCH_ASSIGN_OR_RETURN(other, scalar_other_operand(args, x));
    }
    if (alpha != 1.0) other = fmt::format("({} * {})", float_literal(alpha), other);
    return fmt::format("({} {} {})", x[0], op, other);
  };
}

Emit scalar_infix(std::string_view op) {
  return [op](const Args& args, const Operands& x) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string other, scalar_other(args, x, 1, "other"));
    return fmt::format("({} {} {})", x[0], op, other);
  };
}

// fn(self, other) with a scalar other.
Emit scalar_call(std::string_view fn) {
  return [fn](const Args& args, const Operands& x) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string other, scalar_other(args, x, 1, "other"));
    return fmt::format("{}({}, {})", fn, x[0], other);
  };
}

using Table = std::map<Op, Emit>;

// Unary functions of the CUDA math library and of kernels/scalar_ops.cuh, and unary patterns.
void add_unary_calls(Table& t) {
  t[Op::abs] = unary_call("fabsf");
  t[Op::neg] = operand_pattern(1, "(-({}))");
  for (auto [op, fn] :
       std::initializer_list<std::pair<Op, const char*>>{{Op::exp, "expf"},
                                                         {Op::exp2, "exp2f"},
                                                         {Op::expm1, "expm1f"},
                                                         {Op::log, "logf"},
                                                         {Op::log1p, "log1pf"},
                                                         {Op::log2, "log2f"},
                                                         {Op::log10, "log10f"},
                                                         {Op::sqrt, "sqrtf"},
                                                         {Op::rsqrt, "rsqrtf"},
                                                         {Op::sin, "sinf"},
                                                         {Op::cos, "cosf"},
                                                         {Op::tan, "tanf"},
                                                         {Op::asin, "asinf"},
                                                         {Op::acos, "acosf"},
                                                         {Op::atan, "atanf"},
                                                         {Op::sinh, "sinhf"},
                                                         {Op::cosh, "coshf"},
                                                         {Op::tanh, "tanhf"},
                                                         {Op::asinh, "asinhf"},
                                                         {Op::acosh, "acoshf"},
                                                         {Op::atanh, "atanhf"},
                                                         {Op::erf, "erff"},
                                                         {Op::erfinv, "erfinvf"},
                                                         {Op::floor, "floorf"},
                                                         {Op::ceil, "ceilf"},
                                                         {Op::round, "rintf"},
                                                         {Op::trunc, "truncf"},
                                                         {Op::sigmoid, "op_sigmoid"},
                                                         {Op::relu, "op_relu"},
                                                         {Op::silu, "op_silu"},
                                                         {Op::mish, "op_mish"},
                                                         {Op::hardsigmoid, "op_hardsigmoid"},
                                                         {Op::hardswish, "op_hardswish"},
                                                         {Op::sign, "op_sign"}})
    t[op] = unary_call(fn);
  t[Op::reciprocal] = operand_pattern(1, "(1.0f / {})");
  t[Op::isnan] = operand_pattern(1, "op_bool({0} != {0})");
  t[Op::isinf] = operand_pattern(1, "op_bool(isinf({}))");
  t[Op::logical_not] = operand_pattern(1, "op_bool({} == 0.0f)");
  // On bool data (a mask's `~`) bitwise_not is logical not; integers would need their bits.
  t[Op::bitwise_not] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    if (args.node.outputs[0].dtype != ir::DType::boolean)
      return make_error("node '{}' ({}): bitwise_not of integers has no elementwise rendering",
                        args.node.id, args.node.op_name);
    return fmt::format("op_bool({} == 0.0f)", x[0]);
  };
}

// Unary ops with scalar arguments (slopes, bounds, modes) read from the node.
void add_unary_with_arguments(Table& t) {
  t[Op::gelu] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    std::string approximate = args.text(1, "approximate");
    if (approximate.empty() || approximate == "none") return call("op_gelu_erf", x);
    if (approximate == "tanh") return call("op_gelu_tanh", x);
    return make_error("node '{}': gelu approximate='{}' is not known", args.node.id, approximate);
  };
  t[Op::elu] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    STITCH_ASSIGN_OR_RETURN(double alpha, args.number_or(1, "alpha", 1.0));
    STITCH_ASSIGN_OR_RETURN(double scale, args.number_or(2, "scale", 1.0));
    STITCH_ASSIGN_OR_RETURN(double input_scale, args.number_or(3, "input_scale", 1.0));
    return fmt::format("op_elu({}, {}, {}, {})", x[0], float_literal(alpha), float_literal(scale),
                       float_literal(input_scale));
  };
  t[Op::leaky_relu] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    STITCH_ASSIGN_OR_RETURN(double slope, args.number_or(1, "negative_slope", 0.01));
    return fmt::format("op_leaky_relu({}, {})", x[0], float_literal(slope));
  };
  t[Op::hardtanh] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    STITCH_ASSIGN_OR_RETURN(double lo, args.number_or(1, "min_val", -1.0));
    STITCH_ASSIGN_OR_RETURN(double hi, args.number_or(2, "max_val", 1.0));
    return fmt::format("op_clamp({}, {}, {})", x[0], float_literal(lo), float_literal(hi));
  };
  t[Op::softplus] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    STITCH_ASSIGN_OR_RETURN(double beta, args.number_or(1, "beta", 1.0));
    STITCH_ASSIGN_OR_RETURN(double threshold, args.number_or(2, "threshold", 20.0));
    return fmt::format("op_softplus({}, {}, {})", x[0], float_literal(beta),
                       float_literal(threshold));
  };
  t[Op::clamp] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    auto lo = args.number(1, "min");
    auto hi = args.number(2, "max");
    if (lo && hi)
      return fmt::format("op_clamp({}, {}, {})", x[0], float_literal(*lo), float_literal(*hi));
    if (lo) return fmt::format("op_clamp_min({}, {})", x[0], float_literal(*lo));
    if (hi) return fmt::format("op_clamp_max({}, {})", x[0], float_literal(*hi));
    return x[0];
  };
  t[Op::pow_tensor_scalar] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    STITCH_ASSIGN_OR_RETURN(double exponent, args.number_or(1, "exponent", NAN));
    return fmt::format("op_pow({}, {})", x[0], float_literal(exponent));
  };
  t[Op::to_copy] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(1);
    const ir::Arg* dtype_arg = args.node.kwarg("dtype");
    std::optional<ir::DType> dtype = dtype_arg ? dtype_arg->as_dtype() : std::nullopt;
    if (!dtype || *dtype == ir::DType::float32) return x[0];
    if (*dtype == ir::DType::boolean) return fmt::format("op_bool({} != 0.0f)", x[0]);
    if (ir::is_integral(*dtype)) return fmt::format("truncf({})", x[0]);
    return make_error("node '{}': conversion to {} is outside the fp32 track", args.node.id,
                      ir::dtype_name(*dtype));
  };
}

void add_binary(Table& t) {
  t[Op::add_tensor] = add_like("+", false);
  t[Op::sub_tensor] = add_like("-", false);
  t[Op::add_scalar] = add_like("+", true);
  t[Op::sub_scalar] = add_like("-", true);
  t[Op::rsub_scalar] = [](const Args& args, const Operands& x) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string other, scalar_other(args, x, 1, "other"));
    STITCH_ASSIGN_OR_RETURN(double alpha, args.number_or(2, "alpha", 1.0));
    std::string self = alpha == 1.0 ? x[0] : fmt::format("({} * {})", float_literal(alpha), x[0]);
    return fmt::format("({} - {})", other, self);
  };
  t[Op::mul_tensor] = binary_infix("*");
  t[Op::div_tensor] = binary_infix("/");
  t[Op::mul_scalar] = scalar_infix("*");
  t[Op::div_scalar] = scalar_infix("/");
  t[Op::div_tensor_mode] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(2);
    std::string mode = args.text(2, "rounding_mode");
    if (mode.empty()) return fmt::format("({} / {})", x[0], x[1]);
    if (mode == "trunc") return fmt::format("truncf({} / {})", x[0], x[1]);
    if (mode == "floor") return fmt::format("floorf({} / {})", x[0], x[1]);
    return make_error("node '{}': rounding_mode '{}' is not known", args.node.id, mode);
  };
  t[Op::pow_tensor_tensor] = binary_call("powf");
  t[Op::pow_scalar] = [](const Args& args, const Operands& x) -> Result<std::string> {
    if (x.size() == 2) return fmt::format("powf({}, {})", x[0], x[1]);  // (base, exponent)
    NEED(1);
    STITCH_ASSIGN_OR_RETURN(double base, args.number_or(0, "self", NAN));
    return fmt::format("powf({}, {})", float_literal(base), x[0]);
  };
  t[Op::fmod_tensor] = binary_call("fmodf");
  t[Op::fmod_scalar] = scalar_call("fmodf");
  t[Op::remainder_tensor] = binary_call("op_remainder");
  t[Op::remainder_scalar] = scalar_call("op_remainder");
  t[Op::atan2] = binary_call("atan2f");
  t[Op::maximum] = binary_call("op_maximum");
  t[Op::minimum] = binary_call("op_minimum");
  for (auto [tensor_op, scalar_op, infix] : std::initializer_list<std::tuple<Op, Op, const char*>>{
           {Op::eq_tensor, Op::eq_scalar, "=="},
           {Op::ne_tensor, Op::ne_scalar, "!="},
           {Op::lt_tensor, Op::lt_scalar, "<"},
           {Op::le_tensor, Op::le_scalar, "<="},
           {Op::gt_tensor, Op::gt_scalar, ">"},
           {Op::ge_tensor, Op::ge_scalar, ">="}}) {
    t[tensor_op] = compare_tensor(infix);
    t[scalar_op] = compare_scalar(infix);
  }
  t[Op::logical_and] = logical("&&");
  t[Op::logical_or] = logical("||");
  t[Op::logical_xor] = logical("!=");
  t[Op::prelu_kernel] = operand_pattern(2, "({0} > 0.0f ? {0} : {1} * {0})");
}

void add_ternary(Table& t) {
  t[Op::where_self] = operand_pattern(3, "({} != 0.0f ? {} : {})");
  t[Op::clamp_tensor] = [](const Args& args, const Operands& x) -> Result<std::string> {
    // One operand per tensor bound; an absent min before a tensor max may also be there as a
    // placeholder (positional operands), so a lone max is the last operand either way.
    const bool has_min = args.is_tensor(1, "min"), has_max = args.is_tensor(2, "max");
    if (x.size() < 1u + has_min + has_max || x.size() > 3)
      return make_error("node '{}' ({}): clamp bounds do not match its {} operand(s)", args.node.id,
                        args.node.op_name, x.size());
    if (has_min && has_max) return fmt::format("op_clamp({}, {}, {})", x[0], x[1], x[2]);
    if (has_min) return fmt::format("op_clamp_min({}, {})", x[0], x[1]);
    if (has_max) return fmt::format("op_clamp_max({}, {})", x[0], x.back());
    return x[0];
  };
  t[Op::addcmul] = [](const Args& args, const Operands& x) -> Result<std::string> {
    NEED(3);
    STITCH_ASSIGN_OR_RETURN(double value, args.number_or(3, "value", 1.0));
    return fmt::format("({} + {} * {} * {})", x[0], float_literal(value), x[1], x[2]);
  };
  t[Op::lerp_tensor] = operand_pattern(3, "({0} + {2} * ({1} - {0}))");
}

const Table& table() {
  static const Table emitters = [] {
    Table t;
    add_unary_calls(t);
    add_unary_with_arguments(t);
    add_binary(t);
    add_ternary(t);
    return t;
  }();
  return emitters;
}

}  // namespace

std::string float_literal(double value) {
  if (std::isnan(value)) return "__int_as_float(0x7fffffff)";
  if (std::isinf(value))
    return value > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  float f = static_cast<float>(value);
  if (std::isinf(f)) return value > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
  std::string text = fmt::format("{}", f);  // shortest round-trip for float
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text + "f";
}

bool can_render_elementwise(ir::Op op) {
  return table().count(op) > 0;
}

Result<std::string> render_elementwise(const ir::Node& node,
                                       const std::vector<std::string>& operands) {
  auto found = table().find(node.op);
  if (found == table().end())
    return make_error("node '{}' ({}): no elementwise rendering for this op", node.id,
                      node.op_name);
  return found->second(Args{node}, operands);
}

}  // namespace stitch::codegen
